import type { KeywordScope, KeywordTermSource } from '@app/contracts';

/*
 * The seam between the keyword lexicon (issue 7, `keywords/`) and attention (`attention/`): attention asks which
 * terms hit a message's text in its context, synchronously, from a matcher compiled off the hot path. The lexicon
 * side owns the store, versions, extraction and feedback; attention only reads hits and versions.
 */

/** Where a message was said: the scopes whose terms may hit it. Scopes never leak across groups or threads. */
export interface KeywordContext {
  groupId: string | null;
  threadId?: string;
  personaId?: string;
  /** The persona's current activity (life-director), when known. */
  activityId?: string;
  /** A game or tool session running in the group, when any. */
  gameId?: string;
}

export interface KeywordHit {
  termId: string;
  /** The canonical term (an alias may be what matched). */
  term: string;
  scope: KeywordScope;
  /** The scope's own id: '' for global, the group id, the thread id, … */
  scopeId: string;
  /** Effective weight after decay, 0–1. */
  weight: number;
  confidence: number;
  /** Offsets of the match in the normalised text. */
  start: number;
  end: number;
  /** Where the term came from: `persona` terms are the persona's interests, which attention scores on its own. */
  source?: KeywordTermSource;
}

export interface KeywordLookup {
  /**
   * The lexicon version visible in this context (changes when any scope visible here changes). Attention keeps
   * the version it judged a snoozed batch with, and re-evaluates the batch when this moves on.
   */
  versionFor(context: KeywordContext): string;
  /** Terms hitting `text` in `context`, at most one hit per term, strongest first. */
  match(text: string, context: KeywordContext): KeywordHit[];
  /**
   * Compile one set at least at `version` now, rather than when the versions stream is next read: the scheduler
   * calls it on a `keyword.lexicon.versioned` of its group before deciding, so the wake it causes sees the change.
   */
  catchUp?(set: { scope: KeywordScope; ownerId: string; version: number }): Promise<void>;
}

/** Nest injection token of the `KeywordLookup` the scheduler's attention reads. */
export const KEYWORD_LOOKUP = Symbol('KEYWORD_LOOKUP');

/** A lexicon with no terms (unit tests of attention, or keywords switched off). */
export const emptyKeywordLookup: KeywordLookup = {
  versionFor: () => '0',
  match: () => [],
};
