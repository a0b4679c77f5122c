/**
 * The state of one message segment of one action in outbound's send ledger. Shared by the ledger (storage) and
 * the send policy (decisions).
 *
 * pending  → a previous attempt found the implementation unreachable; nothing went out, safe to try again.
 * sending  → written (durably) just before the API call. Found on redelivery, it means we crashed mid-call and
 *            cannot know whether the message went out.
 * sent     → the implementation confirmed it, with its message id.
 * failed   → the implementation refused it, or stayed unreachable for every attempt. Terminal.
 * unknown  → it may or may not have gone out. Terminal: never resent.
 */
export const LEDGER_STATES = ['pending', 'sending', 'sent', 'failed', 'unknown'] as const;
export type LedgerState = (typeof LEDGER_STATES)[number];

export interface LedgerError {
  code: string;
  message: string;
}

export interface LedgerEntry {
  state: LedgerState;
  /** API calls made for this segment so far (the one in flight included). */
  attempts: number;
  onebotMessageId?: string;
  /** ISO time of the transition. */
  at: string;
  error?: LedgerError;
  retcode?: number;
}
