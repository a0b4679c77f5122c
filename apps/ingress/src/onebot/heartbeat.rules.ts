/** A heartbeat may be this late (beyond twice its interval) before the connection counts as dead. */
const HEARTBEAT_SLACK_MS = 1000;

/**
 * The longest heartbeat interval taken at its word (an hour; implementations beat every few seconds to a minute).
 * A larger one, or one that is not a positive whole number of ms, is junk: the watchdog keeps the deadline it had.
 * Unbounded, an interval of 2^60 ms made a timeout Node cannot hold, which it runs after 1 ms instead: the watchdog
 * dropped a healthy connection at once.
 */
const MAX_HEARTBEAT_INTERVAL_MS = 3_600_000;

/**
 * When the connection must be given up on: no frame for twice the announced heartbeat interval. Undefined for an
 * interval that is not one (see `MAX_HEARTBEAT_INTERVAL_MS`).
 */
export function heartbeatDeadlineMs(intervalMs: number): number | undefined {
  if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0 || intervalMs > MAX_HEARTBEAT_INTERVAL_MS) return undefined;
  return 2 * intervalMs + HEARTBEAT_SLACK_MS;
}
