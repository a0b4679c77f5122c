import { HttpException } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { QunliError } from '@app/contracts';

/** Stable codes of what ingress answers a OneBot implementation when it refuses an input. */
export const OneBotErrorCode = {
  BadJson: 'ONEBOT.BAD_JSON',
  InvalidPayload: 'ONEBOT.INVALID_PAYLOAD',
  Unauthorized: 'ONEBOT.UNAUTHORIZED',
  BadSignature: 'ONEBOT.BAD_SIGNATURE',
  TooLarge: 'ONEBOT.TOO_LARGE',
  Unavailable: 'ONEBOT.UNAVAILABLE',
} as const;

/** The JSON body of every refusal: `{ "error": { "code", "message", …details } }`. */
export function errorBody(error: QunliError): { error: Record<string, unknown> } {
  return { error: { code: error.code, message: error.message, ...error.details } };
}

export function oneBotHttpError(status: number, error: QunliError): HttpException {
  return new HttpException(errorBody(error), status);
}

/** For plain HTTP middleware, which runs before Nest's exception layer. */
export function sendError(
  res: ServerResponse,
  status: number,
  error: QunliError,
  headers: Record<string, string> = {},
) {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(JSON.stringify(errorBody(error)));
}
