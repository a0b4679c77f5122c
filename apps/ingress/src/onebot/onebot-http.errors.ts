import type { ServerResponse } from 'node:http';
import { QunliError } from '@app/contracts';
import type { PayloadProblem, RejectReason } from './onebot-event.normaliser.js';

/** Stable codes of what ingress answers a OneBot implementation when it refuses an input. */
export const OneBotErrorCode = {
  BadJson: 'ONEBOT.BAD_JSON',
  InvalidPayload: 'ONEBOT.INVALID_PAYLOAD',
  Unauthorized: 'ONEBOT.UNAUTHORIZED',
  BadSignature: 'ONEBOT.BAD_SIGNATURE',
  TooLarge: 'ONEBOT.TOO_LARGE',
  TooManySegments: 'ONEBOT.TOO_MANY_SEGMENTS',
  TextTooLong: 'ONEBOT.TEXT_TOO_LONG',
  BadRole: 'ONEBOT.BAD_ROLE',
  SelfIdMismatch: 'ONEBOT.SELF_ID_MISMATCH',
  Unavailable: 'ONEBOT.UNAVAILABLE',
  MethodNotAllowed: 'ONEBOT.METHOD_NOT_ALLOWED',
  Internal: 'ONEBOT.INTERNAL',
} as const;

/** The JSON body of every refusal: `{ "error": { "code", "message", …details } }`. */
export function errorBody(error: QunliError): { error: Record<string, unknown> } {
  return { error: { code: error.code, message: error.message, ...error.details } };
}

/** Answer a refusal on a plain Node response (the HTTP endpoint runs before Express and Nest). */
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

const CODES: Record<RejectReason, string> = {
  bad_json: OneBotErrorCode.BadJson,
  invalid_payload: OneBotErrorCode.InvalidPayload,
  unauthorized: OneBotErrorCode.Unauthorized,
  bad_signature: OneBotErrorCode.BadSignature,
  bad_role: OneBotErrorCode.BadRole,
  too_large: OneBotErrorCode.TooLarge,
  too_many_segments: OneBotErrorCode.TooManySegments,
  text_too_long: OneBotErrorCode.TextTooLong,
  self_id_mismatch: OneBotErrorCode.SelfIdMismatch,
};

/** The refusal of an input the normaliser (or a check before it) named the bad field of. */
export function problemError(problem: PayloadProblem): QunliError {
  return new QunliError(CODES[problem.reason], `${problem.field} ${problem.message}`, {
    field: problem.field,
    reason: problem.reason,
  });
}

/** What a WebSocket peer is told about a refused frame: the same JSON error an HTTP caller gets with its 400. */
export function errorFrame(problem: PayloadProblem): { error: Record<string, unknown> } {
  return errorBody(problemError(problem));
}
