/** Retry policy of LLM calls: which failures are worth another attempt, and how long to wait before it. */

export interface RetryPolicy {
  /** Attempts after the first. */
  maxRetries: number;
  /** First backoff; doubles per attempt, with up to 25% jitter. */
  baseDelayMs: number;
  /** Longest wait, also for a `Retry-After` the API asks for. */
  maxDelayMs: number;
}

/** 408, 409, 429 and 5xx answers and lost connections are transient; 4xx answers are the request's fault. */
export function isRetryable(code: string, status: number | undefined): boolean {
  if (code === 'LLM.UNREACHABLE' || code === 'LLM.RATE_LIMITED') return true;
  if (code !== 'LLM.HTTP_ERROR' || status === undefined) return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Backoff before attempt `attempt + 1` (attempt 1 = the first call); `retryAfterMs` from the API wins. */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0) return Math.min(policy.maxDelayMs, retryAfterMs);
  const base = policy.baseDelayMs * 2 ** (attempt - 1);
  return Math.min(policy.maxDelayMs, Math.round(base * (1 + random() * 0.25)));
}

/** `Retry-After` is seconds or an HTTP date; `retry-after-ms` (OpenAI) is milliseconds. */
export function parseRetryAfter(
  retryAfter: string | null | undefined,
  retryAfterMs: string | null | undefined,
  nowMs: number,
): number | undefined {
  if (retryAfterMs) {
    const ms = Number(retryAfterMs);
    if (Number.isFinite(ms)) return ms;
  }
  if (!retryAfter) return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const at = Date.parse(retryAfter);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
