/** Backoff of the forward-WebSocket client: 0.5 s, 1 s, 2 s … capped at 30 s. Infrastructure time, not scaled. */
export const RECONNECT_BASE_MS = 500;
export const RECONNECT_CAP_MS = 30_000;

/**
 * Delay before reconnect attempt `attempt` (1 for the first retry after a drop). `jitter` in [0, 1) takes up to
 * half of the step off, so clients that lost the same implementation do not all come back at the same instant.
 */
export function reconnectDelayMs(attempt: number, jitter = 0): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 16));
  const step = Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** exponent);
  return Math.round(step * (1 - Math.min(Math.max(jitter, 0), 1) / 2));
}
