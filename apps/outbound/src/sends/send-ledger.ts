/**
 * Outbound's send ledger (docs/adr/0009), shared by the ledger store and the send policy. One hash per partition
 * holds, per action, its plan and the state of each of its parts; every change that is also a fact (a part sent,
 * failed, unknown, dropped) is written in the same MULTI as the event that tells it, so the ledger and the log
 * never disagree.
 *
 * A part's states:
 * pending  → nothing went out (never tried, or every try so far definitely failed): safe to send.
 * sending  → written just before the API call; found on restart, the call may or may not have reached QQ.
 * unsure   → the call returned an unknown outcome (NapCat 1200, timeout after the request left, connection lost,
 *            `ok` without a message id). Like `sending`, it is verified against recent history before anything
 *            is sent again.
 * sent     → delivered, with its OneBot message id. Terminal.
 * failed   → refused for every attempt. Terminal.
 * unknown  → verification itself was impossible. Terminal (`send.unknown`).
 * dropped  → not sent on purpose (its trigger was recalled). Terminal.
 */
export const PART_STATES = ['pending', 'sending', 'unsure', 'sent', 'failed', 'unknown', 'dropped'] as const;
export type PartState = (typeof PART_STATES)[number];

export const SETTLED_STATES: ReadonlySet<PartState> = new Set(['sent', 'failed', 'unknown', 'dropped']);

export interface LedgerError {
  code: string;
  message: string;
}

/** Why an outcome is unknown: decides what happens when verification is impossible. */
export type UnsureCause = 'risk_control' | 'lost' | 'silent_drop' | 'interrupted';

export interface PartEntry {
  state: PartState;
  /** API calls made for this part so far (the one in flight included). */
  attempts: number;
  /** Verification rounds made for the current unknown outcome. */
  verifications?: number;
  onebotMessageId?: string;
  /** Wall-clock epoch ms the latest call was made: the history is searched from here (the implementation's clock). */
  calledAt?: number;
  /** ISO time of the last transition (product time). */
  at: string;
  error?: LedgerError;
  retcode?: number;
  cause?: UnsureCause;
  verified?: boolean;
}

export type ReplyForm = 'text' | 'forward';

/** How an action is sent, decided once (after the optional polish) and kept, so a redelivery sends the same parts. */
export interface ReplyPlan {
  form: ReplyForm;
  /** The chat messages (`text`), or the nodes of the one forward message (`forward`). */
  parts: string[];
  /** For `forward`: the plain parts to fall back to when the implementation cannot send forward messages. */
  fallback?: string[];
  /** The message the first part quotes. */
  quoteMessageId?: string;
  /**
   * Non-text content of the one part (a sticker from cognition's `send_emoji`): sent instead of the part's text,
   * which then only names it (`[表情：…]`) for logs and the ledger.
   */
  segments?: { type: string; data: Record<string, string> }[];
  polished: boolean;
  at: string;
}

/** The action's last word, written when its last part settled (or it was dropped). */
export interface ActionDone {
  outcome: 'delivered' | 'failed' | 'unknown' | 'dropped';
  at: string;
}
