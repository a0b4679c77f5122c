import type { IncomingMessage } from 'node:http';
import { QunliError } from '@app/contracts';
import { checkAccessToken, presentedToken } from './onebot-auth.rules.js';
import { OneBotErrorCode } from './onebot-http.errors.js';

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
