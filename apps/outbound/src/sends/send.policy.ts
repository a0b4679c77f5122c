import type { ApiOutcome, SendMessageResult } from '@app/onebot';
import type { LedgerEntry, LedgerError } from './send-ledger.js';

/**
 * The exactly-once discipline of outbound, as decisions over the ledger. A segment is sent at most once: before
 * the API call its ledger entry says `sending`; whatever the call ends in is written right after. Anything that
 * may have reached QQ (`unknown`, or `sending` found after a crash) is never sent again: in a chat a duplicate
 * reply is worse than a missing one.
 */

/** What to do with one segment given its ledger entry (`undefined`: never touched). */
export type SegmentStep =
  /** Nothing went out yet: call the API (this is attempt number `attempt`). */
  | { kind: 'send'; attempt: number }
  /** Delivered before (a redelivered action): publish its `message.sent` again from the ledger, do not send. */
  | { kind: 'already-sent'; entry: LedgerEntry }
  /** Settled as failed or unknown before: publish that again, do not send, stop the action here. */
  | { kind: 'already-settled'; entry: LedgerEntry }
  /** We crashed during the API call: it may have gone out, so it becomes unknown. */
  | { kind: 'interrupted'; attempts: number };

export function stepFor(entry: LedgerEntry | undefined): SegmentStep {
  if (entry === undefined) return { kind: 'send', attempt: 1 };
  switch (entry.state) {
    case 'pending':
      return { kind: 'send', attempt: entry.attempts + 1 };
    case 'sending':
      return { kind: 'interrupted', attempts: entry.attempts };
    case 'sent':
      return { kind: 'already-sent', entry };
    case 'failed':
    case 'unknown':
      return { kind: 'already-settled', entry };
  }
}

export const INTERRUPTED: LedgerError = {
  code: 'SEND.INTERRUPTED',
  message: 'outbound stopped during the API call; the message may have been delivered, so it is not resent',
};

/** What one API call means for its segment. */
export type AttemptVerdict =
  | { kind: 'sent'; onebotMessageId: string }
  | { kind: 'failed'; error: LedgerError; retcode?: number }
  | { kind: 'unknown'; error: LedgerError; retcode?: number }
  /** Nothing was sent and attempts remain: wait `delayMs`, then try again. */
  | { kind: 'retry'; delayMs: number; error: LedgerError };

export interface RetryOptions {
  maxAttempts: number;
  /** First backoff; doubles per attempt up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export const DEFAULT_BASE_DELAY_MS = 250;
export const DEFAULT_MAX_DELAY_MS = 5_000;

export function backoffMs(attempt: number, options: RetryOptions): number {
  const base = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  return Math.min(options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS, base * 2 ** (attempt - 1));
}

export function verdictFor(
  outcome: ApiOutcome<SendMessageResult>,
  attempt: number,
  options: RetryOptions,
): AttemptVerdict {
  switch (outcome.kind) {
    case 'ok':
      // An implementation that confirms without an id still delivered; the id is then unknown to us.
      return {
        kind: 'sent',
        onebotMessageId: outcome.data?.message_id === undefined ? '' : String(outcome.data.message_id),
      };
    case 'failed':
    case 'unknown': {
      const error = { code: outcome.code, message: outcome.message };
      return outcome.retcode === undefined
        ? { kind: outcome.kind, error }
        : { kind: outcome.kind, error, retcode: outcome.retcode };
    }
    case 'unreachable': {
      const error = { code: outcome.code, message: outcome.message };
      if (attempt >= options.maxAttempts) {
        return {
          kind: 'failed',
          error: { code: 'SEND.UNREACHABLE', message: `gave up after ${attempt} attempts: ${outcome.message}` },
        };
      }
      return { kind: 'retry', delayMs: backoffMs(attempt, options), error };
    }
  }
}
