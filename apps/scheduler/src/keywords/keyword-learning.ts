import type { DecisionKeywordHit } from '@app/contracts';
import { sightWords, type CandidatePool } from './candidate-pool.rules.js';
import { KeywordError } from './keyword.errors.js';
import type { LexiconDraft } from './lexicon-draft.js';
import {
  controlTerm,
  feedbackTerm,
  learnTerm,
  maintainSet,
  overCap,
  seedTerm,
  setRef,
  suppressHighFrequency,
  termText,
  type ControlCommand,
  type FeedbackSignal,
  type LexiconPolicy,
  type SetRef,
} from './lexicon.rules.js';

/*
 * What each kind of input teaches the lexicon, applied to a draft of the sets it touches. Pure apart from the
 * candidate words, which the caller cuts (jieba) and passes in.
 */

const HOUR = 3_600_000;
/** A term already in a set is reinforced by a sighting at most this often (one event, not one per message). */
export const REINFORCE_EVERY_MS = HOUR;
/** A set is maintained (decay, expiry, caps) at most this often, when an event touches it. */
export const MAINTAIN_EVERY_MS = HOUR;

export function groupSet(groupId: string): SetRef {
  return setRef('group', groupId);
}

export function threadSet(groupId: string, threadId: string): SetRef {
  return setRef('thread', `${groupId}/${threadId}`);
}

export const GLOBAL_SET: SetRef = { scope: 'global', ownerId: '' };

/**
 * A message's candidate words: counted in the group's pool (`pool` holds at least these words and the total);
 * promoted, reinforced or suppressed in its set. Returns the pool's changed part, and whether it is time to age it.
 */
export function learnFromMessage(
  draft: LexiconDraft,
  pool: CandidatePool,
  input: { groupId: string; senderId: string; words: readonly string[] },
  now: number,
  policy: LexiconPolicy,
): { pool: CandidatePool; needsAging: boolean } {
  const ref = groupSet(input.groupId);
  const sighted = sightWords(pool, input.words, input.senderId, now, policy);
  for (const s of sighted.sightings) {
    const existing = draft.term(ref, s.word);
    if (existing) {
      if (s.highFrequency) draft.apply(suppressHighFrequency(existing, s.docs, sighted.pool.totalDocs, policy));
      else if (existing.status === 'active' && now - existing.lastSeenAt >= REINFORCE_EVERY_MS) {
        draft.apply(
          learnTerm(ref, { ...wordOf(s.word, s.docs, s.speakers, policy), weight: existing.weight }, existing, now),
        );
      }
    } else if (s.promotable) {
      draft.apply(learnTerm(ref, wordOf(s.word, s.docs, s.speakers, policy), undefined, now));
    }
  }
  draft.applyAll(overCap(draft.terms(ref), policy));
  return { pool: sighted.pool, needsAging: sighted.needsAging };
}

function wordOf(word: string, docs: number, speakers: number, policy: LexiconPolicy) {
  return {
    text: word,
    source: 'extracted' as const,
    weight: policy.promotedWeight,
    confidence: Math.min(0.9, 0.3 + 0.1 * speakers),
    why: `said ${docs} times by ${speakers} people`,
  };
}

/** A thread summary's words: the thread's set, living as long as the thread's TTL. */
export function learnFromSummary(
  draft: LexiconDraft,
  input: { groupId: string; threadId: string; words: readonly string[] },
  now: number,
  policy: LexiconPolicy,
): void {
  const ref = threadSet(input.groupId, input.threadId);
  const ttl = policy.scopes.thread.ttlMs;
  for (const word of input.words) {
    draft.apply(
      learnTerm(
        ref,
        {
          text: word,
          source: 'summary',
          weight: policy.summaryWeight,
          confidence: 0.6,
          expiresAt: ttl === null ? null : now + ttl,
          why: 'in the thread summary',
        },
        draft.term(ref, word),
        now,
      ),
    );
  }
  draft.applyAll(overCap(draft.terms(ref), policy));
}

/** Memory judged a word the group's jargon: it enters the group set (never the global one). */
export function learnJargon(
  draft: LexiconDraft,
  input: { groupId: string; term: string; meaning: string },
  now: number,
  policy: LexiconPolicy,
): void {
  const ref = groupSet(input.groupId);
  let text: string;
  try {
    text = termText(input.term);
  } catch (error) {
    // Memory's terms are validated already; one that does not normalise to a term is not one here either.
    if (error instanceof KeywordError) return;
    throw error;
  }
  draft.apply(
    learnTerm(
      ref,
      { text, source: 'jargon', weight: policy.jargonWeight, confidence: 0.8, why: `jargon: ${input.meaning}` },
      draft.term(ref, text),
      now,
    ),
  );
  draft.applyAll(overCap(draft.terms(ref), policy));
}

/** A person's command on one set. Throws `KeywordError` for a bad scope, term or a delete of nothing. */
export function applyControl(
  draft: LexiconDraft,
  input: { scope: string; ownerId: string; command: ControlCommand },
  now: number,
  policy: LexiconPolicy,
): void {
  const ref = setRef(input.scope, input.ownerId);
  draft.apply(controlTerm(ref, input.command, draft.term(ref, termText(input.command.term)), now, policy));
  draft.applyAll(overCap(draft.terms(ref), policy));
}

/** Feedback on the terms that hit; `setOf` says which loaded set holds each term id (the store's index). */
export function applyFeedback(
  draft: LexiconDraft,
  hits: readonly DecisionKeywordHit[],
  signal: FeedbackSignal,
  setOf: (termId: string) => string | undefined,
  now: number,
  policy: LexiconPolicy,
): void {
  for (const hit of hits) {
    const setKey = setOf(hit.termId);
    const term = setKey ? draft.termById(setKey, hit.termId) : undefined;
    if (term) draft.apply(feedbackTerm(term, signal, now, policy));
  }
}

/** Decay, expiry and caps of one set, at most once per `MAINTAIN_EVERY_MS`. */
export function maintainIfDue(draft: LexiconDraft, ref: SetRef, now: number, policy: LexiconPolicy): void {
  const since = draft.maintainedAt(ref);
  if (since !== null && now - since < MAINTAIN_EVERY_MS) return;
  draft.applyAll(maintainSet(draft.terms(ref), since ?? now, now, policy));
  draft.markMaintained(ref, now);
}

/**
 * The persona's interests in the global set: new ones seeded, ones the persona no longer has removed. Terms a
 * person pinned, suppressed or added are left alone.
 */
export function seedInterests(
  draft: LexiconDraft,
  interests: readonly string[],
  now: number,
  policy: LexiconPolicy,
): void {
  const wanted = new Set<string>();
  for (const interest of interests) {
    let text: string;
    try {
      text = termText(interest);
    } catch (error) {
      // An interest longer than a term is a description, not a keyword (its words are seeded on their own).
      if (error instanceof KeywordError) continue;
      throw error;
    }
    wanted.add(text);
    draft.apply(seedTerm(GLOBAL_SET, text, draft.term(GLOBAL_SET, text), now, policy));
  }
  for (const term of draft.terms(GLOBAL_SET)) {
    if (term.source === 'persona' && term.status === 'active' && !wanted.has(term.text)) {
      draft.apply({ change: 'deleted', term, reason: 'deleted: no longer a persona interest' });
    }
  }
}
