import { isRetryable, parseRetryAfter, retryDelayMs } from './llm-retry.rules.js';

describe('LLM retry rules', () => {
  const policy = { maxRetries: 2, baseDelayMs: 500, maxDelayMs: 8000 };

  it('retries rate limits, server errors and lost connections, never bad requests or aborts', () => {
    expect(isRetryable('LLM.HTTP_ERROR', 429)).toBe(true);
    expect(isRetryable('LLM.HTTP_ERROR', 503)).toBe(true);
    expect(isRetryable('LLM.HTTP_ERROR', 408)).toBe(true);
    expect(isRetryable('LLM.UNREACHABLE', undefined)).toBe(true);
    expect(isRetryable('LLM.HTTP_ERROR', 400)).toBe(false);
    expect(isRetryable('LLM.HTTP_ERROR', 401)).toBe(false);
    expect(isRetryable('LLM.ABORTED', undefined)).toBe(false);
    expect(isRetryable('LLM.TIMEOUT', undefined)).toBe(false);
  });

  it('backs off exponentially with bounded jitter, capped, and obeys Retry-After', () => {
    expect(retryDelayMs(policy, 1, undefined, () => 0)).toBe(500);
    expect(retryDelayMs(policy, 2, undefined, () => 0)).toBe(1000);
    expect(retryDelayMs(policy, 2, undefined, () => 1)).toBe(1250);
    expect(retryDelayMs(policy, 10, undefined, () => 0)).toBe(8000);
    expect(retryDelayMs(policy, 1, 3000)).toBe(3000);
    expect(retryDelayMs(policy, 1, 60_000)).toBe(8000);
  });

  it('reads Retry-After as seconds, as a date, and retry-after-ms', () => {
    expect(parseRetryAfter('2', null, 0)).toBe(2000);
    expect(parseRetryAfter(new Date(5000).toUTCString(), null, 1000)).toBe(4000);
    expect(parseRetryAfter('2', '150', 0)).toBe(150);
    expect(parseRetryAfter(null, null, 0)).toBeUndefined();
    expect(parseRetryAfter('soon', null, 0)).toBeUndefined();
  });
});
