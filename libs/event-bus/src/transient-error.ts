import { QunliError } from '@app/contracts';

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);

/**
 * Whether a handler failure says "a dependency is unavailable" rather than "this event cannot be handled".
 * Transient failures are retried without counting towards dead-lettering, so an outage of Postgres or Redis
 * never sends good events to the dead-letter stream.
 */
export function isTransientError(error: unknown): boolean {
  if (error instanceof QunliError) return error.details.transient === true;
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return true;
    // Postgres SQLSTATE: connection exceptions (08xxx), shutdown (57P0x), too many connections, serialization.
    if (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[1-3]$/.test(code) || ['53300', '40001', '40P01'].includes(code)) {
      return true;
    }
  }
  if (typeof message === 'string') {
    return /Connection is closed|Connection terminated|connect ECONNREFUSED|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(
      message,
    );
  }
  return false;
}
