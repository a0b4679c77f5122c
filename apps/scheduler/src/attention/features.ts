import type { KeywordHit } from '../keywords/keyword-lookup.js';
import type { GroupActorState, TalkSettings } from '../actors/group-actor.js';
import { frequencyReadiness, talkThreshold, equivalentMessages } from '../actors/group-actor.js';
import type { ThreadState } from '../threads/thread-linking.js';
import { isLowInformation, isUrgent, normalise, questionScore, shared, topicTokens } from './text.js';

/*
 * Attention's feature functions (ADR-0018): each reads one aspect of a batch (one sender's fragments in one
 * thread) and says 0–1 how much of it there is, with a few words a person understands when it matters.
 */

export interface Feature {
  value: number;
  /** Why, in a few words ("about 猫", "replied 40 s ago"); absent when the value is 0. */
  note?: string;
}

const none: Feature = { value: 0 };

/** The persona's interests as topic tokens, computed once per profile. */
export interface InterestIndex {
  interests: { text: string; tokens: string[] }[];
}

export function interestIndex(interests: readonly string[]): InterestIndex {
  return { interests: interests.map((text) => ({ text, tokens: [...topicTokens(text)] })) };
}

/** A message about what the persona cares about: one shared token is a hint (0.7), two are the topic (1). */
export function personaInterest(text: string, index: InterestIndex): Feature {
  const normal = normalise(text);
  const tokens = topicTokens(text);
  let best: { hits: string[] } | undefined;
  for (const interest of index.interests) {
    const hits = interest.tokens.filter((t) => (t.length === 1 ? normal.includes(t) : tokens.has(t)));
    if (hits.length > 0 && (!best || hits.length > best.hits.length)) best = { hits };
  }
  if (!best) return none;
  return { value: best.hits.length >= 2 ? 1 : 0.7, note: `about ${best.hits.slice(0, 2).join('/')}` };
}

/** Follow-ups within this of the bot's reply continue the conversation. */
export const FOLLOW_UP_MS = 3 * 60_000;
/** The bot is still part of a thread it spoke in this recently. */
export const PART_OF_THREAD_MS = 6 * 60_000;

/** The bot is part of this thread; its partner going on is a follow-up (1), others in it count half. */
export function threadContinuity(thread: ThreadState | undefined, senderId: string, now: number): Feature {
  if (!thread?.botJoined || thread.lastBotAt === undefined) return none;
  const since = now - thread.lastBotAt;
  if (thread.botPartner === senderId && since <= FOLLOW_UP_MS) {
    return { value: 1, note: 'follow-up from the person it is talking with' };
  }
  if (since <= PART_OF_THREAD_MS) return { value: 0.5, note: 'a thread it is part of' };
  return none;
}

/** A question (？, 吗, 怎么, 有没有, 谁知道 …) or an urgent ask. */
export function questionUrgency(text: string): Feature {
  const q = questionScore(text);
  if (isUrgent(text)) return { value: 1, note: 'an urgent ask' };
  if (q === 0) return none;
  return { value: q, note: q === 1 ? 'a question' : 'question words' };
}

/** An open question of this sender in this thread that nobody has answered, growing with its age. */
export function socialObligation(
  thread: ThreadState | undefined,
  senderId: string,
  now: number,
  obligationMs: number,
): Feature {
  const open = thread?.openQuestions.filter((q) => q.senderId === senderId) ?? [];
  const oldest = open[0];
  if (!oldest) return none;
  const age = Math.max(0, now - oldest.at);
  const value = Math.min(1, age / Math.max(1, obligationMs));
  return value < 0.05 ? { value: 0 } : { value, note: `nobody answered in ${Math.round(age / 1000)} s` };
}

/** Breaking a long quiet in the group (a small nudge; never enough on its own). */
export function silence(gapBeforeMs: number | undefined): Feature {
  if (gapBeforeMs === undefined || gapBeforeMs < 5 * 60_000) return none;
  return {
    value: Math.min(1, gapBeforeMs / (30 * 60_000)),
    note: `after ${Math.round(gapBeforeMs / 60_000)} min of quiet`,
  };
}

/** A new topic: the batch started its thread, or shares almost nothing with it. */
export function novelty(thread: ThreadState | undefined, fragments: number, text: string): Feature {
  const tokens = topicTokens(text);
  if (tokens.size === 0) return none;
  if (!thread || thread.messages <= fragments) return { value: 1, note: 'new topic' };
  const overlap = shared(tokens, thread.tokens).length / tokens.size;
  return overlap < 0.2 ? { value: 0.5 } : none;
}

/**
 * Lexicon hits, by weight × confidence, summed and capped. Terms seeded from the persona's interests (source
 * `persona`) are left out: `interest` already scores them, and counting a word twice would let one interest word
 * skip the wait that an open question gets.
 */
export function keywordHits(all: readonly KeywordHit[]): Feature {
  const hits = all.filter((h) => h.source !== 'persona');
  if (hits.length === 0) return none;
  const value = Math.min(
    1,
    hits.reduce((sum, h) => sum + h.weight * h.confidence, 0),
  );
  return value === 0 ? none : { value, note: `keyword ${hits[0]!.term}` };
}

/**
 * The bot spoke lately: during the cooldown fully; after it, by how far the talk-frequency threshold still is.
 * A follow-up of the person it is talking with is exempt (answering them is the conversation, not flooding).
 */
export function recentlyReplied(actor: GroupActorState, now: number, talk: TalkSettings, continuing: boolean): Feature {
  if (continuing || actor.lastBotReplyAt === undefined) return none;
  const ago = Math.round((now - actor.lastBotReplyAt) / 1000);
  if (actor.cooldownUntil !== undefined && now < actor.cooldownUntil) return { value: 1, note: `replied ${ago} s ago` };
  const readiness = frequencyReadiness(actor, now, talk);
  if (readiness >= 1) return none;
  const threshold = talkThreshold(talk);
  const seen = Math.min(equivalentMessages(actor, now, talk), threshold);
  return {
    value: 1 - readiness,
    note: Number.isFinite(threshold) ? `${seen} of ${threshold} messages since its last reply` : 'talk frequency is 0',
  };
}

/**
 * How much of the window's reply budget is used (replies and ambient episodes in flight). A spent budget stops
 * everyone; short of that, the conversation the bot is in goes on unpenalised.
 */
export function budgetSpent(used: number, budget: number, continuing = false): Feature {
  if (used === 0) return none;
  if (budget <= 0 || used >= budget) return { value: 1, note: `${used}/${budget} replies this window` };
  if (continuing) return none;
  return { value: used / budget, note: `${used}/${budget} replies this window` };
}

/** Every fragment is chatter (哈哈, 草, +1, 6, 。。。, emoji only). */
export function lowInformation(texts: readonly string[]): boolean {
  return texts.every((t) => isLowInformation(t));
}
