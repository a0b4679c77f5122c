import type { OneBotApiResponse } from './onebot-types.js';

/**
 * What one OneBot API call amounted to, as far as the caller can know. The distinction that matters is whether
 * the implementation may have acted on the request:
 * - `ok`: it did (retcode 0).
 * - `failed`: it definitely refused; retrying the same request will not help.
 * - `unknown`: it may have acted (a NapCat timeout often means the message went out under risk control, or the
 *   connection broke after the request was written). Never resend: a duplicate reply is worse than a missing one.
 * - `unreachable`: nothing was sent (no connection); safe to retry.
 */
export type ApiOutcome<T = unknown> =
  ApiOk<T> | ApiProblem<'failed'> | ApiProblem<'unknown'> | ApiProblem<'unreachable'>;
export type ApiOutcomeKind = ApiOutcome['kind'];
export const API_OUTCOME_KINDS: readonly ApiOutcomeKind[] = ['ok', 'failed', 'unknown', 'unreachable'];

export interface ApiOk<T> {
  kind: 'ok';
  /** Absent for actions that answer without data (NapCat `delete_msg`). */
  data: T | undefined;
}

export interface ApiProblem<K extends 'failed' | 'unknown' | 'unreachable'> {
  kind: K;
  /** Stable error code (`ONEBOT.TIMEOUT`). */
  code: string;
  /** What the implementation or the transport said. */
  message: string;
  retcode?: number;
  httpStatus?: number;
}

/** Retcodes that are a definite refusal: the implementation looked at the request and did not act. */
const REFUSED: ReadonlyMap<number, string> = new Map([
  [100, 'ONEBOT.REFUSED'], // go-cqhttp: action failed (SEND_MSG_API_ERROR, …)
  [102, 'ONEBOT.BAD_REQUEST'], // go-cqhttp: invalid parameters
  [400, 'ONEBOT.BAD_REQUEST'], // NapCat over HTTP
  [1400, 'ONEBOT.BAD_REQUEST'], // NapCat over WS
  [401, 'ONEBOT.UNAUTHORIZED'],
  [403, 'ONEBOT.UNAUTHORIZED'],
  [1401, 'ONEBOT.UNAUTHORIZED'],
  [1403, 'ONEBOT.UNAUTHORIZED'],
  [404, 'ONEBOT.UNSUPPORTED'],
  [1404, 'ONEBOT.UNSUPPORTED'],
]);

/** NapCat's handler timeout: 1200 over WS, 200 over HTTP. Often delivered anyway (risk control), so unknown. */
const TIMED_OUT = new Set([200, 1200]);

/** Transport errors raised before a single byte of the request left: retrying is safe. */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The request was written (or may have been) and the answer never came back whole. */
const RESPONSE_TIMEOUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

function describe(body: OneBotApiResponse): string {
  const text = [body.message, body.wording, body.msg].find((m) => typeof m === 'string' && m.length > 0);
  return text ?? `status ${String(body.status)}, retcode ${body.retcode}`;
}

function isResponseEnvelope(value: unknown): value is OneBotApiResponse {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { retcode?: unknown }).retcode === 'number'
  );
}

/** Classify a parsed response envelope (HTTP body or WS frame). */
export function classifyEnvelope<T>(body: OneBotApiResponse<T>): ApiOutcome<T> {
  const { retcode } = body;
  if (retcode === 0) return { kind: 'ok', data: body.data ?? undefined };
  if (retcode === 1 || body.status === 'async') {
    // Queued for asynchronous execution: accepted, but the result (and the message id) is never reported.
    return { kind: 'unknown', code: 'ONEBOT.ASYNC', message: 'accepted for asynchronous execution', retcode };
  }
  if (TIMED_OUT.has(retcode)) return { kind: 'unknown', code: 'ONEBOT.TIMEOUT', message: describe(body), retcode };
  const refused = REFUSED.get(retcode);
  if (refused !== undefined) return { kind: 'failed', code: refused, message: describe(body), retcode };
  // A code we cannot interpret: the implementation may have acted, so the safe reading is "unknown".
  return { kind: 'unknown', code: 'ONEBOT.UNRECOGNISED_RETCODE', message: describe(body), retcode };
}

/** Classify a complete HTTP response: status code plus raw body text. */
export function classifyHttpResponse<T>(httpStatus: number, bodyText: string): ApiOutcome<T> {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = undefined;
  }
  const envelope = isResponseEnvelope(body) ? (body as OneBotApiResponse<T>) : undefined;
  const said = envelope ? describe(envelope) : bodyText.slice(0, 200);

  if (httpStatus >= 400 && httpStatus < 500) {
    const code =
      httpStatus === 401 || httpStatus === 403
        ? 'ONEBOT.UNAUTHORIZED'
        : httpStatus === 404
          ? 'ONEBOT.UNSUPPORTED'
          : 'ONEBOT.HTTP_REJECTED';
    return {
      kind: 'failed',
      code,
      message: `HTTP ${httpStatus}: ${said}`,
      httpStatus,
      ...(envelope && { retcode: envelope.retcode }),
    };
  }
  if (httpStatus >= 500) {
    // The body was sent; the server broke while (or after) acting on it.
    return { kind: 'unknown', code: 'ONEBOT.SERVER_ERROR', message: `HTTP ${httpStatus}: ${said}`, httpStatus };
  }
  if (httpStatus < 200 || httpStatus >= 300 || !envelope) {
    return {
      kind: 'unknown',
      code: 'ONEBOT.BAD_RESPONSE',
      message: `HTTP ${httpStatus} without a OneBot response envelope: ${said}`,
      httpStatus,
    };
  }
  const outcome = classifyEnvelope(envelope);
  return outcome.kind === 'ok' ? outcome : { ...outcome, httpStatus };
}

/**
 * Classify a transport error by its code (Node `errno` code or undici `UND_ERR_*`). Only errors raised before the
 * request could leave count as unreachable; anything later may have been acted on.
 */
export function classifyTransportError(code: string | undefined, message: string): ApiOutcome<never> {
  if (code !== undefined && NOT_CONNECTED.has(code)) {
    return { kind: 'unreachable', code: 'ONEBOT.UNREACHABLE', message: `${code}: ${message}` };
  }
  if (code !== undefined && RESPONSE_TIMEOUT.has(code)) {
    return { kind: 'unknown', code: 'ONEBOT.TIMEOUT', message: `${code}: ${message}` };
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET') {
    return { kind: 'unknown', code: 'ONEBOT.CONNECTION_LOST', message: `${code}: ${message}` };
  }
  return { kind: 'unknown', code: 'ONEBOT.TRANSPORT', message: `${code ?? 'error'}: ${message}` };
}
