import type { IncomingMessage, ServerResponse } from 'node:http';
import { QunliError } from '@app/contracts';
import { checkAccessToken, presentedToken } from './onebot-auth.rules.js';
import { OneBotErrorCode, sendError } from './onebot-http.errors.js';
import type { OneBotIntake } from './onebot-intake.service.js';

type Next = (error?: unknown) => void;

/** `?access_token=` of a request URL (OneBot's alternative to the Authorization header). */
export function queryToken(url: string | undefined): string | undefined {
  return new URL(url ?? '/', 'http://localhost').searchParams.get('access_token') ?? undefined;
}

/** Why an access token was refused, or `undefined` when it passes. */
export function tokenProblem(expected: string | undefined, req: IncomingMessage): QunliError | undefined {
  const check = checkAccessToken(expected, presentedToken(req.headers.authorization, queryToken(req.url)));
  switch (check) {
    case 'ok':
      return undefined;
    case 'missing':
      return new QunliError(OneBotErrorCode.Unauthorized, 'access token required (Authorization: Bearer <token>)');
    case 'invalid':
      return new QunliError(OneBotErrorCode.Unauthorized, 'access token does not match');
  }
}

/**
 * Checks the access token before the body is read, so an unauthenticated caller never makes us parse a megabyte
 * of JSON and is counted as `unauthorized` whatever its body holds.
 */
export function accessTokenGate(expected: string | undefined, intake: OneBotIntake) {
  return (req: IncomingMessage, res: ServerResponse, next: Next): void => {
    const problem = tokenProblem(expected, req);
    if (!problem) return next();
    intake.refuse({ field: 'Authorization', message: problem.message, reason: 'unauthorized' }, 'http', {
      peer: req.socket.remoteAddress ?? 'http',
    });
    sendError(res, 401, problem, { 'WWW-Authenticate': 'Bearer' });
  };
}

interface BodyParserError {
  type?: unknown;
  status?: unknown;
  message?: unknown;
  /** The raw text, on a parse error. */
  body?: unknown;
}

/**
 * Turns the JSON body parser's failures into OneBot errors. Express calls it only for errors raised before the
 * route (the parser), so anything that is not a body problem goes on unchanged.
 */
export function bodyErrorHandler(intake: OneBotIntake, limitBytes: number) {
  return (error: unknown, req: IncomingMessage, res: ServerResponse, next: Next): void => {
    const failure = (typeof error === 'object' && error !== null ? error : {}) as BodyParserError;
    const peer = req.socket.remoteAddress ?? 'http';
    if (failure.type === 'entity.too.large') {
      intake.refuse({ field: '$', message: `body exceeds ${limitBytes} bytes`, reason: 'too_large' }, 'http', { peer });
      sendError(res, 413, new QunliError(OneBotErrorCode.TooLarge, `body exceeds ${limitBytes} bytes`));
      return;
    }
    const status = typeof failure.status === 'number' ? failure.status : 500;
    if (typeof failure.type === 'string' && status >= 400 && status < 500) {
      const message = typeof failure.message === 'string' ? failure.message : 'body is not valid JSON';
      intake.refuse({ field: '$', message: `body is not valid JSON: ${message}`, reason: 'bad_json' }, 'http', {
        peer,
        ...(typeof failure.body === 'string' && { raw: failure.body }),
      });
      sendError(res, 400, new QunliError(OneBotErrorCode.BadJson, `body is not valid JSON: ${message}`));
      return;
    }
    next(error);
  };
}
