import type { ApiOutcome, SendMessageResult } from '@app/onebot';
import type { LedgerError, PartEntry, UnsureCause } from './send-ledger.js';

/**
 * The exactly-once-effective discipline of outbound (docs/adr/0009), as decisions over the ledger. Before a call a
 * part is `sending`; an answer with a message id settles it `sent`; a definite refusal is retried with backoff up
 * to the attempt limit; anything that may have reached QQ is verified against the implementation's recent
 * history before it is ever sent again.
 */

/** What to do with one part given its ledger entry (`undefined`: never touched). */
export type PartStep = { kind: 'send'; attempt: number } | { kind: 'verify'; cause: UnsureCause } | { kind: 'settled' };

export function stepFor(entry: PartEntry | undefined): PartStep {
  if (entry === undefined) return { kind: 'send', attempt: 1 };
  switch (entry.state) {
    case 'pending':
      return { kind: 'send', attempt: entry.attempts + 1 };
    case 'sending':
      return { kind: 'verify', cause: 'interrupted' };
    case 'unsure':
      return { kind: 'verify', cause: entry.cause ?? 'lost' };
    case 'sent':
    case 'failed':
    case 'unknown':
    case 'dropped':
      return { kind: 'settled' };
  }
}

/** What one API call means for its part. */
export type AttemptVerdict =
  | { kind: 'sent'; onebotMessageId: string }
  /** Definitely not sent; `retryable` false when the attempts are used up. */
  | { kind: 'refused'; error: LedgerError; retcode?: number; retryable: boolean }
  /** May have been sent: verify first. `risk_control` also cools the group down. */
  | { kind: 'unsure'; cause: UnsureCause; error: LedgerError; retcode?: number };

/** NapCat's timeout retcodes (1200 WS / 200 HTTP): usually risk control, and the message often went out anyway. */
const RISK_CONTROL = new Set([200, 1200]);

export function verdictFor(
  outcome: ApiOutcome<SendMessageResult>,
  attempt: number,
  maxAttempts: number,
): AttemptVerdict {
  switch (outcome.kind) {
    case 'ok': {
      const id = outcome.data?.message_id;
      if (id === undefined || id === null || String(id) === '') {
        // `status: ok` without a message id: a silent drop, not a success.
        return {
          kind: 'unsure',
          cause: 'silent_drop',
          error: { code: 'SEND.SILENT_DROP', message: 'the implementation answered ok without a message_id' },
        };
      }
      return { kind: 'sent', onebotMessageId: String(id) };
    }
    case 'failed':
    case 'unreachable': {
      const error = { code: outcome.code, message: outcome.message };
      return {
        kind: 'refused',
        error,
        retryable: attempt < maxAttempts,
        ...(outcome.retcode !== undefined && { retcode: outcome.retcode }),
      };
    }
    case 'unknown': {
      const error = { code: outcome.code, message: outcome.message };
      const cause: UnsureCause =
        outcome.retcode !== undefined && RISK_CONTROL.has(outcome.retcode) ? 'risk_control' : 'lost';
      return { kind: 'unsure', cause, error, ...(outcome.retcode !== undefined && { retcode: outcome.retcode }) };
    }
  }
}

/** When verification cannot be done (no history API, or it stays unreachable): what becomes of the part. */
export function whenUnverifiable(
  cause: UnsureCause,
  attempts: number,
  maxAttempts: number,
): 'unknown' | 'retry' | 'failed' {
  // A silent drop is a failure (issue 5): nothing says it went out, so it is tried again within the attempt limit.
  if (cause === 'silent_drop') return attempts < maxAttempts ? 'retry' : 'failed';
  return 'unknown';
}

/** Exponential backoff in real milliseconds: base, 2×base, 4×base … capped at 30 s. */
export function backoffMs(attempt: number, baseMs: number): number {
  return Math.min(30_000, baseMs * 2 ** Math.max(0, attempt - 1));
}
