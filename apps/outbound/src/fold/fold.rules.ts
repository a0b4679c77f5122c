import { splitReply } from '../split/reply.splitter.js';
import type { ReplyPlan } from '../sends/send-ledger.js';

export interface PlanSettings {
  /** `QUNLI_SEND_MAX_SEGMENT_CHARS` (the reply path's max_length). */
  maxChars: number;
  /** `QUNLI_SEND_MAX_MESSAGES` (max_messages). */
  maxMessages: number;
  /** `QUNLI_SEND_FOLD_CHARS`: longer replies become one forward message (0: never). */
  foldChars: number;
}

/** Nodes one forward message holds at most; the last takes the rest. */
export const MAX_FORWARD_NODES = 50;

/**
 * How a reply goes out: split into chat messages (the reply path), or — beyond the fold threshold — folded into
 * one forward message (合并转发) whose nodes are the same cuts, with the plain split kept as the fallback for
 * implementations without `send_group_forward_msg`. `undefined` for a blank reply.
 */
export function planReply(
  text: string,
  settings: PlanSettings,
  at: string,
  polished: boolean,
  quoteMessageId?: string,
): ReplyPlan | undefined {
  const parts = splitReply(text, { maxChars: settings.maxChars, maxSegments: settings.maxMessages });
  if (parts.length === 0) return undefined;
  const quote = quoteMessageId !== undefined ? { quoteMessageId } : {};
  if (settings.foldChars > 0 && Array.from(text.trim()).length > settings.foldChars) {
    const nodes = splitReply(text, { maxChars: settings.maxChars, maxSegments: MAX_FORWARD_NODES });
    return { form: 'forward', parts: nodes, fallback: parts, polished, at, ...quote };
  }
  return { form: 'text', parts, polished, at, ...quote };
}

/** The plan after the implementation refused the forward message: the plain parts. */
export function unfolded(plan: ReplyPlan, at: string): ReplyPlan {
  const { fallback, ...rest } = plan;
  return { ...rest, form: 'text', parts: fallback ?? plan.parts, at };
}
