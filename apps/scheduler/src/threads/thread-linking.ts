import { isLowInformation, questionScore, shared, snippet, topicTokens } from '../attention/text.js';

/*
 * Threads (issue 7): which conversation in a group a message belongs to. A group chat interleaves several; a
 * message joins one by the strongest evidence first — an explicit thread, a reply to one of its messages, an @ of
 * someone talking in it, its own speaker going on, shared topic tokens, the flow of the newest conversation — and
 * starts a new one when nothing links it (or the gap was too long). Pure: the group state holds the threads; the
 * decider links each message as it is tracked and folds the result.
 */

export interface OpenQuestion {
  eventId: string;
  messageId: string;
  senderId: string;
  at: number;
  text: string;
}

export interface ThreadState {
  /** `t-<first event id>`: stable under replay and redelivery. */
  id: string;
  startedAt: number;
  lastAt: number;
  /** In the order they joined; `self` is the bot. */
  participants: string[];
  /** OneBot ids of its recent messages (the bot's too), for reply chains. */
  messageIds: string[];
  /** Recent topic tokens, newest last. */
  tokens: string[];
  messages: number;
  lastSpeaker: string;
  botJoined: boolean;
  lastBotAt?: number;
  /** The person the bot answered last in this thread. */
  botPartner?: string;
  openQuestions: OpenQuestion[];
  version: number;
}

export type ThreadLink = 'explicit' | 'reply' | 'at' | 'speaker' | 'overlap' | 'flow' | 'new';

export interface ThreadSettings {
  /** Quiet this long, a thread is idle (`thread.idle`) and nothing links to it any more. */
  idleMs: number;
  /** The same speaker going on within this gap stays in their thread. */
  speakerGapMs: number;
  /** With no other evidence, a message within this gap of the newest thread's last message joins it. */
  flowGapMs: number;
  /** Topic tokens a message must share with a thread to join it by overlap. */
  overlapTokens: number;
  /** Live threads per group; a new one beyond this retires the quietest. */
  maxLive: number;
}

export const DEFAULT_THREAD_SETTINGS: ThreadSettings = {
  idleMs: 10 * 60_000,
  speakerGapMs: 2 * 60_000,
  flowGapMs: 45_000,
  overlapTokens: 2,
  maxLive: 8,
};

export const SELF = 'self';
const PARTICIPANTS_KEPT = 32;
const MESSAGE_IDS_KEPT = 32;
const TOKENS_KEPT = 64;
const OPEN_QUESTIONS_KEPT = 4;

/** What linking needs of one message. */
export interface LinkInput {
  eventId: string;
  messageId: string;
  senderId: string;
  text: string;
  at: number;
  replyToMessageId?: string;
  /** User ids the message @s (not the bot). */
  atUserIds: readonly string[];
  /** It @s the bot (or otherwise addresses it). */
  addressesBot: boolean;
  /** A thread the producer already assigned. */
  explicitThread?: string;
}

export interface LinkResult {
  threadId: string;
  link: ThreadLink;
}

export function threadIdFor(eventId: string): string {
  return `t-${eventId}`;
}

export function isLive(thread: ThreadState, now: number, settings: ThreadSettings): boolean {
  return now - thread.lastAt < settings.idleMs;
}

/** Live threads, most recently active first. */
export function liveThreads(
  threads: Readonly<Record<string, ThreadState>>,
  now: number,
  settings: ThreadSettings,
): ThreadState[] {
  return Object.values(threads)
    .filter((t) => isLive(t, now, settings))
    .sort((a, b) => b.lastAt - a.lastAt || (a.id < b.id ? -1 : 1));
}

/** The thread a message joins, and why. */
export function linkMessage(
  threads: Readonly<Record<string, ThreadState>>,
  input: LinkInput,
  settings: ThreadSettings,
): LinkResult {
  if (input.explicitThread) return { threadId: input.explicitThread, link: 'explicit' };
  const live = liveThreads(threads, input.at, settings);
  if (input.replyToMessageId !== undefined) {
    const quoted = live.find((t) => t.messageIds.includes(input.replyToMessageId!));
    if (quoted) return { threadId: quoted.id, link: 'reply' };
  }
  if (input.addressesBot) {
    const withBot = live.filter((t) => t.botJoined).sort((a, b) => (b.lastBotAt ?? 0) - (a.lastBotAt ?? 0))[0];
    if (withBot && (withBot.botPartner === input.senderId || withBot.participants.includes(input.senderId))) {
      return { threadId: withBot.id, link: 'at' };
    }
  }
  if (input.atUserIds.length > 0) {
    const addressed = live.find((t) => input.atUserIds.some((id) => t.participants.includes(id)));
    if (addressed) return { threadId: addressed.id, link: 'at' };
  }
  const own = live.find((t) => t.lastSpeaker === input.senderId && input.at - t.lastAt <= settings.speakerGapMs);
  if (own) return { threadId: own.id, link: 'speaker' };
  const tokens = topicTokens(input.text);
  if (tokens.size > 0) {
    let best: { thread: ThreadState; n: number } | undefined;
    for (const t of live) {
      const n = shared(tokens, t.tokens).length;
      if (n >= Math.min(settings.overlapTokens, tokens.size) && (!best || n > best.n)) best = { thread: t, n };
    }
    if (best) return { threadId: best.thread.id, link: 'overlap' };
  }
  const newest = live[0];
  if (newest && input.at - newest.lastAt <= settings.flowGapMs) return { threadId: newest.id, link: 'flow' };
  return { threadId: threadIdFor(input.eventId), link: 'new' };
}

function capped<T>(items: T[], max: number): T[] {
  return items.length > max ? items.slice(items.length - max) : items;
}

/**
 * The thread after `input` joined it (a new thread when `thread` is undefined). A substantive statement by someone
 * other than the asker answers the open questions before it; a question opens one.
 */
export function joinThread(thread: ThreadState | undefined, threadId: string, input: LinkInput): ThreadState {
  const base: ThreadState = thread ?? {
    id: threadId,
    startedAt: input.at,
    lastAt: input.at,
    participants: [],
    messageIds: [],
    tokens: [],
    messages: 0,
    lastSpeaker: input.senderId,
    botJoined: false,
    openQuestions: [],
    version: 0,
  };
  const chatter = isLowInformation(input.text);
  const question = !chatter && questionScore(input.text) >= 0.6;
  let openQuestions = base.openQuestions;
  if (!chatter && !question) {
    openQuestions = openQuestions.filter((q) => q.senderId === input.senderId);
  } else if (!chatter && input.replyToMessageId !== undefined) {
    openQuestions = openQuestions.filter((q) => q.messageId !== input.replyToMessageId);
  }
  if (question) {
    openQuestions = capped(
      [
        ...openQuestions,
        {
          eventId: input.eventId,
          messageId: input.messageId,
          senderId: input.senderId,
          at: input.at,
          text: snippet(input.text, 60),
        },
      ],
      OPEN_QUESTIONS_KEPT,
    );
  }
  const tokens = chatter ? base.tokens : capped([...base.tokens, ...topicTokens(input.text)], TOKENS_KEPT);
  return {
    ...base,
    lastAt: Math.max(base.lastAt, input.at),
    participants: base.participants.includes(input.senderId)
      ? base.participants
      : capped([...base.participants, input.senderId], PARTICIPANTS_KEPT),
    messageIds: capped([...base.messageIds, input.messageId], MESSAGE_IDS_KEPT),
    tokens: [...new Set(tokens)],
    messages: base.messages + 1,
    lastSpeaker: input.senderId,
    openQuestions,
    version: base.version + 1,
  };
}

/** The bot's reply (delivered) joins the thread it answers; the partner's open questions there are answered. */
export function botReplied(
  thread: ThreadState,
  reply: { at: number; partnerId: string; messageId?: string; text: string },
): ThreadState {
  return {
    ...thread,
    lastAt: Math.max(thread.lastAt, reply.at),
    participants: thread.participants.includes(SELF)
      ? thread.participants
      : capped([...thread.participants, SELF], PARTICIPANTS_KEPT),
    messageIds:
      reply.messageId === undefined
        ? thread.messageIds
        : capped([...thread.messageIds, reply.messageId], MESSAGE_IDS_KEPT),
    tokens: [...new Set(capped([...thread.tokens, ...topicTokens(reply.text)], TOKENS_KEPT))],
    lastSpeaker: SELF,
    botJoined: true,
    lastBotAt: reply.at,
    botPartner: reply.partnerId,
    openQuestions: thread.openQuestions.filter((q) => q.senderId !== reply.partnerId),
    version: thread.version + 1,
  };
}
