/**
 * Send pacing (issue 5), in product time: a token bucket per conversation (burst, then a steady pace), one bucket
 * for the whole deployment, an optional typing delay, and a cooldown after an unknown outcome. A send that has no
 * token waits for one; nothing is ever dropped.
 */

export interface Bucket {
  /** Tokens per product millisecond. */
  ratePerMs: number;
  capacity: number;
}

export function groupBucket(perMinute: number, burst: number): Bucket {
  return { ratePerMs: perMinute / 60_000, capacity: Math.max(1, burst) };
}

export function globalBucket(perSecond: number): Bucket {
  return { ratePerMs: perSecond / 1000, capacity: Math.max(1, Math.ceil(perSecond)) };
}

/** Product milliseconds a person would take to type `text` at `charsPerSecond` (0: no delay), capped at 10 s. */
export function typingDelayMs(text: string, charsPerSecond: number): number {
  if (charsPerSecond <= 0) return 0;
  const chars = Array.from(text).length;
  return Math.min(10_000, Math.round((chars / charsPerSecond) * 1000));
}

/**
 * The token bucket as a Redis script (one hash per bucket: `tokens`, `at`), so every outbound process shares the
 * global bucket. ARGV: now (product ms), rate per ms, capacity. Takes a token and returns 0, or returns the
 * product milliseconds until one is there (taking nothing).
 */
export const TAKE_TOKEN = `
local now, rate, capacity = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens'))
local at = tonumber(redis.call('HGET', KEYS[1], 'at'))
if tokens == nil or at == nil then tokens, at = capacity, now end
if now > at then tokens = math.min(capacity, tokens + (now - at) * rate) end
if tokens >= 1 then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'at', tostring(math.max(now, at)))
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return 0
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(math.max(now, at)))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return math.ceil((1 - tokens) / rate)
`;

/**
 * Give back a token `TAKE_TOKEN` took and did not use (capped at the capacity). ARGV: capacity. A bucket that has
 * expired meanwhile is full anyway: nothing to give back to.
 */
export const GIVE_TOKEN = `
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens'))
if tokens == nil then return 0 end
redis.call('HSET', KEYS[1], 'tokens', tostring(math.min(tonumber(ARGV[1]), tokens + 1)))
return 1
`;
