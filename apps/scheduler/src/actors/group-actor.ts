/*
 * The group actor (ADR-0001 §6): what the group knows about the bot's own part in it — when it last replied and
 * to whom, how much of its reply budget this window has used, its cooldown, how many messages went by since.
 * Plain data in `GroupState.actor`, folded by `evolve`; all times are product time from the scaled clock.
 *
 * Talk frequency follows the Maisaka trigger rule: after a reply the bot needs `ceil(1 / (talkValue × adjust))`
 * new messages before it speaks up unasked again, and a long empty window counts as messages (one per average gap
 * between its recent replies) so a quiet group is not shut out for ever. Readiness only permits: silence alone
 * never makes the bot speak (attention needs something to answer).
 */

export interface GroupActorState {
  lastBotReplyAt?: number;
  lastPartnerId?: string;
  lastThreadId?: string;
  /** Product times of the bot's replies still inside the budget window, oldest first. */
  replies: number[];
  messagesSinceReply: number;
  lastMessageAt?: number;
  /** The quiet before the newest message. */
  lastGapMs?: number;
  cooldownUntil?: number;
  version: number;
}

export interface TalkSettings {
  /** Maisaka's talk_value: 0–1, how often the bot talks. */
  talkValue: number;
  /** Maisaka's _talk_frequency_adjust, a multiplier (per group). */
  adjust: number;
  /** The budget window. */
  windowMs: number;
  /** Replies per window (direct ones count too; ambient ones stop at it). */
  budget: number;
  /** After a reply, ambient messages of other conversations wait this long. */
  cooldownMs: number;
}

export function initialActor(): GroupActorState {
  return { replies: [], messagesSinceReply: 0, version: 0 };
}

export function observeMessage(actor: GroupActorState, at: number): GroupActorState {
  const next: GroupActorState = { ...actor, messagesSinceReply: actor.messagesSinceReply + 1, lastMessageAt: at };
  if (actor.lastMessageAt !== undefined) next.lastGapMs = Math.max(0, at - actor.lastMessageAt);
  return next;
}

export function recordReply(
  actor: GroupActorState,
  reply: { at: number; partnerId: string; threadId: string },
  settings: TalkSettings,
): GroupActorState {
  const replies = [...actor.replies.filter((t) => reply.at - t < settings.windowMs), reply.at];
  return {
    ...actor,
    lastBotReplyAt: reply.at,
    lastPartnerId: reply.partnerId,
    lastThreadId: reply.threadId,
    replies,
    messagesSinceReply: 0,
    cooldownUntil: reply.at + settings.cooldownMs,
    version: actor.version + 1,
  };
}

export function repliesInWindow(actor: GroupActorState, now: number, settings: TalkSettings): number {
  return actor.replies.filter((t) => now - t < settings.windowMs).length;
}

/** `ceil(1 / (talkValue × adjust))` messages between unasked replies; never, when the product is 0. */
export function talkThreshold(settings: Pick<TalkSettings, 'talkValue' | 'adjust'>): number {
  const frequency = settings.talkValue * settings.adjust;
  return frequency <= 0 ? Number.POSITIVE_INFINITY : Math.ceil(1 / frequency);
}

/** The mean gap between the recent replies, or the window shared out over the budget when there are too few. */
export function averageReplyGap(actor: GroupActorState, settings: TalkSettings): number {
  const r = actor.replies;
  if (r.length >= 2) return Math.max(1, (r[r.length - 1]! - r[0]!) / (r.length - 1));
  return settings.windowMs / Math.max(1, settings.budget);
}

/** New messages since the last reply plus the empty-window compensation (Maisaka). */
export function equivalentMessages(actor: GroupActorState, now: number, settings: TalkSettings): number {
  if (actor.lastBotReplyAt === undefined) return Number.POSITIVE_INFINITY;
  const quiet = Math.max(0, now - actor.lastBotReplyAt);
  return actor.messagesSinceReply + Math.floor(quiet / averageReplyGap(actor, settings));
}

/** 0–1: how far the group is toward the next unasked reply (1: the talk-frequency threshold is met). */
export function frequencyReadiness(actor: GroupActorState, now: number, settings: TalkSettings): number {
  const threshold = talkThreshold(settings);
  if (!Number.isFinite(threshold)) return 0;
  return Math.min(1, equivalentMessages(actor, now, settings) / threshold);
}
