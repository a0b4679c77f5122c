import { createHash } from 'node:crypto';
import {
  KEYWORD_SCOPES,
  type KeywordCommand,
  type KeywordScope,
  type KeywordTermChange,
  type KeywordTermSource,
  type KeywordTermStatus,
} from '@app/contracts';
import { KeywordError, KeywordErrorCode } from './keyword.errors.js';
import { isLowInformation } from './stopwords.js';
import { normaliseText } from './text.normaliser.js';

/*
 * The lexicon's rules (ADR-0001 §7.1, ADR-0020), pure: given a set's terms, what a sighting, a learned word, a
 * person's command, feedback or the passing of time changes, as decisions the store turns into
 * `keyword.term.changed` events. New words come in with a small weight; words said often by several people are
 * promoted into their group's set; unseen words decay and expire; every scope has a cap; a word that is in a large
 * share of a group's messages is suppressed there; pinned terms are left alone; and nothing learned from a group
 * ever reaches the global or persona sets (group in-jokes stay in their group).
 */

export interface SetRef {
  scope: KeywordScope;
  /** '' for global, the group id, `<group id>/<thread id>`, the persona id, the activity id, the game id. */
  ownerId: string;
}

export interface LexiconTerm extends SetRef {
  termId: string;
  /** Normalised canonical text. */
  text: string;
  /** Normalised aliases (never the text itself). */
  aliases: string[];
  weight: number;
  confidence: number;
  source: KeywordTermSource;
  status: KeywordTermStatus;
  sightings: number;
  /** Product epoch ms. */
  firstSeenAt: number;
  lastSeenAt: number;
  expiresAt: number | null;
}

/** What the rules decided about one term: its snapshot after the change (before it, for removals) and why. */
export interface TermDecision {
  change: KeywordTermChange;
  term: LexiconTerm;
  reason: string;
}

/** Changes that take the term out of its set. */
export const REMOVING_CHANGES: ReadonlySet<KeywordTermChange> = new Set(['expired', 'evicted', 'deleted']);

export interface ScopePolicy {
  /** Most terms that can hit (active and pinned) the set keeps; the weakest go first. */
  cap: number;
  /** A learned term not seen for this long expires (null: never). */
  ttlMs: number | null;
  /** A learned term's weight halves every this long without a sighting (null: no decay). */
  halfLifeMs: number | null;
}

export interface LexiconPolicy {
  scopes: Record<KeywordScope, ScopePolicy>;
  /** Weight of a word promoted from a group's messages. */
  promotedWeight: number;
  /** Sightings (messages) and distinct speakers before a group word is promoted. */
  promoteSightings: number;
  promoteSpeakers: number;
  seedWeight: number;
  jargonWeight: number;
  summaryWeight: number;
  operatorWeight: number;
  /** Weight steps of feedback: the person followed up; the bot answered but nobody followed up; no reply came. */
  engagedStep: number;
  ignoredStep: number;
  unansweredStep: number;
  /** A learned term whose weight falls below this leaves the set. */
  minWeight: number;
  /** A word in more than this share of a group's recent messages carries no information there. */
  highFrequencyShare: number;
  /** …once the group has said at least this many messages. */
  highFrequencyMinDocs: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const DEFAULT_LEXICON_POLICY: LexiconPolicy = {
  scopes: {
    global: { cap: 500, ttlMs: null, halfLifeMs: null },
    persona: { cap: 300, ttlMs: null, halfLifeMs: null },
    group: { cap: 300, ttlMs: 14 * DAY, halfLifeMs: 3 * DAY },
    thread: { cap: 40, ttlMs: 6 * HOUR, halfLifeMs: 2 * HOUR },
    activity: { cap: 60, ttlMs: DAY, halfLifeMs: null },
    game: { cap: 300, ttlMs: 7 * DAY, halfLifeMs: null },
  },
  promotedWeight: 0.25,
  promoteSightings: 3,
  promoteSpeakers: 2,
  seedWeight: 0.7,
  jargonWeight: 0.5,
  summaryWeight: 0.35,
  operatorWeight: 0.8,
  engagedStep: 0.08,
  ignoredStep: -0.04,
  unansweredStep: -0.02,
  minWeight: 0.05,
  highFrequencyShare: 0.2,
  highFrequencyMinDocs: 40,
};

/** Sources learned from what people say in a group: they never enter the global or persona sets. */
const LEARNED_SOURCES: ReadonlySet<KeywordTermSource> = new Set(['extracted', 'jargon', 'summary']);
/** Sources that decay and expire; persona interests and a person's additions stay until someone removes them. */
const FADING_SOURCES: ReadonlySet<KeywordTermSource> = new Set(['extracted', 'jargon', 'summary', 'activity', 'game']);

export const MAX_TERM_LENGTH = 32;

export function setKeyOf(ref: SetRef): string {
  return `${ref.scope}:${ref.ownerId}`;
}

export function parseSetKey(key: string): SetRef {
  const at = key.indexOf(':');
  const scope = key.slice(0, at) as KeywordScope;
  if (at < 0 || !KEYWORD_SCOPES.includes(scope)) {
    throw new KeywordError(KeywordErrorCode.InvalidScope, `not a keyword set key: ${key}`, { key });
  }
  return { scope, ownerId: key.slice(at + 1) };
}

/** Stable across processes and replays: the same text in the same set is the same term. */
export function termIdOf(ref: SetRef, text: string): string {
  return `kt_${createHash('sha256')
    .update(`${setKeyOf(ref)}\n${text}`)
    .digest('hex')
    .slice(0, 24)}`;
}

/** The set a scope's owner id names, validated (the CLI and control events go through here). */
export function setRef(scope: string, ownerId: string): SetRef {
  if (!(KEYWORD_SCOPES as readonly string[]).includes(scope)) {
    throw new KeywordError(KeywordErrorCode.InvalidScope, `unknown keyword scope "${scope}"`, {
      scope,
      scopes: KEYWORD_SCOPES,
    });
  }
  const s = scope as KeywordScope;
  if (s === 'global' && ownerId !== '') {
    throw new KeywordError(KeywordErrorCode.InvalidScope, 'the global set has no owner id', { scope, ownerId });
  }
  if (s !== 'global' && ownerId.trim() === '') {
    throw new KeywordError(KeywordErrorCode.InvalidScope, `scope "${scope}" needs an owner id`, { scope });
  }
  if (s === 'thread' && !/^[^/]+\/.+$/u.test(ownerId)) {
    throw new KeywordError(KeywordErrorCode.InvalidScope, 'a thread set is owned by "<group id>/<thread id>"', {
      scope,
      ownerId,
    });
  }
  return { scope: s, ownerId };
}

/** A term's canonical form, or a typed error saying why it cannot be one. */
export function termText(raw: string): string {
  const text = normaliseText(raw);
  if (text.length === 0 || [...text].length > MAX_TERM_LENGTH) {
    throw new KeywordError(KeywordErrorCode.InvalidTerm, `a keyword term is 1–${MAX_TERM_LENGTH} characters`, {
      term: raw,
    });
  }
  return text;
}

function clampWeight(weight: number): number {
  return Math.round(Math.min(1, Math.max(0, weight)) * 1000) / 1000;
}

function newTerm(
  ref: SetRef,
  text: string,
  fields: Pick<LexiconTerm, 'source' | 'status' | 'weight' | 'confidence'> & Partial<LexiconTerm>,
  now: number,
): LexiconTerm {
  return {
    ...ref,
    termId: termIdOf(ref, text),
    text,
    aliases: [],
    sightings: 1,
    firstSeenAt: now,
    lastSeenAt: now,
    expiresAt: null,
    ...fields,
    weight: clampWeight(fields.weight),
  };
}

function mergeAliases(existing: readonly string[], more: readonly string[], text: string): string[] {
  const out = [...existing];
  for (const alias of more) if (alias !== text && !out.includes(alias)) out.push(alias);
  return out.slice(0, 8);
}

/** The persona's interests, seeded at start into the global set; unchanged ones decide nothing (restarts are quiet). */
export function seedTerm(
  ref: SetRef,
  raw: string,
  existing: LexiconTerm | undefined,
  now: number,
  policy: LexiconPolicy,
): TermDecision | null {
  const text = termText(raw);
  if (existing) return null;
  return {
    change: 'seeded',
    term: newTerm(ref, text, { source: 'persona', status: 'active', weight: policy.seedWeight, confidence: 1 }, now),
    reason: 'seeded: persona interest',
  };
}

export interface LearnedWord {
  text: string;
  source: KeywordTermSource;
  weight: number;
  confidence: number;
  aliases?: string[];
  expiresAt?: number | null;
  /** For the reason line: "said 3 times by 2 people", "jargon: 群主的外号". */
  why: string;
}

/**
 * A word learned from a group (promoted from its messages, memory's jargon, a thread summary) enters or reinforces
 * a group or thread set. Global and persona sets refuse it: that is the in-joke rule, enforced here and nowhere else.
 */
export function learnTerm(
  ref: SetRef,
  word: LearnedWord,
  existing: LexiconTerm | undefined,
  now: number,
): TermDecision | null {
  if (LEARNED_SOURCES.has(word.source) && (ref.scope === 'global' || ref.scope === 'persona')) {
    throw new KeywordError(
      KeywordErrorCode.InJokeNotGlobal,
      `a word learned in a group never enters the ${ref.scope} set`,
      { term: word.text, source: word.source, scope: ref.scope },
    );
  }
  if (isLowInformation(word.text)) return null;
  if (!existing) {
    return {
      change: word.source === 'extracted' ? 'promoted' : 'added',
      term: newTerm(
        ref,
        word.text,
        {
          source: word.source,
          status: 'active',
          weight: word.weight,
          confidence: word.confidence,
          aliases: mergeAliases([], word.aliases ?? [], word.text),
          expiresAt: word.expiresAt ?? null,
        },
        now,
      ),
      reason: `${word.source === 'extracted' ? 'promoted' : 'added'}: ${word.why}`,
    };
  }
  if (existing.status === 'suppressed') return null;
  const weight = existing.status === 'pinned' ? existing.weight : clampWeight(Math.max(existing.weight, word.weight));
  return {
    change: 'reinforced',
    term: {
      ...existing,
      weight,
      confidence: Math.max(existing.confidence, word.confidence),
      aliases: mergeAliases(existing.aliases, word.aliases ?? [], existing.text),
      sightings: existing.sightings + 1,
      lastSeenAt: now,
      expiresAt:
        existing.expiresAt === null && word.expiresAt == null
          ? null
          : Math.max(existing.expiresAt ?? 0, word.expiresAt ?? 0),
    },
    reason: `reinforced: ${word.why}`,
  };
}

export interface ControlCommand {
  command: KeywordCommand;
  term: string;
  aliases?: string[];
  weight?: number;
  requestedBy: string;
}

/**
 * A person's command. `pin` and `suppress` of a term the set does not hold create it (so a suppressed word is never
 * learned later); `add` creates or updates an active operator term; `delete` of a missing term is an error.
 */
export function controlTerm(
  ref: SetRef,
  command: ControlCommand,
  existing: LexiconTerm | undefined,
  now: number,
  policy: LexiconPolicy,
): TermDecision {
  const text = termText(command.term);
  const aliases = (command.aliases ?? []).map(termText);
  const weight = command.weight === undefined ? undefined : clampWeight(command.weight);
  const by = command.requestedBy;
  const base =
    existing ??
    newTerm(
      ref,
      text,
      { source: 'operator', status: 'active', weight: weight ?? policy.operatorWeight, confidence: 1 },
      now,
    );
  const updated: LexiconTerm = {
    ...base,
    aliases: mergeAliases(base.aliases, aliases, base.text),
    ...(weight !== undefined ? { weight } : {}),
    lastSeenAt: now,
  };
  switch (command.command) {
    case 'pin':
      return { change: 'pinned', term: { ...updated, status: 'pinned', expiresAt: null }, reason: `pinned by ${by}` };
    case 'suppress':
      return { change: 'suppressed', term: { ...updated, status: 'suppressed' }, reason: `suppressed by ${by}` };
    case 'add':
      return {
        change: existing ? 'reinforced' : 'added',
        term: { ...updated, status: existing?.status === 'pinned' ? 'pinned' : 'active' },
        reason: `added by ${by}`,
      };
    case 'delete':
      if (!existing) {
        throw new KeywordError(KeywordErrorCode.NotFound, `no term "${text}" in ${setKeyOf(ref)}`, {
          term: text,
          set: setKeyOf(ref),
        });
      }
      return { change: 'deleted', term: existing, reason: `deleted by ${by}` };
  }
}

export type FeedbackSignal = 'engaged' | 'ignored' | 'unanswered';

/** Hit → episode → reply → follow-up: a term that led to a conversation gains weight, one that led nowhere loses it. */
export function feedbackTerm(
  existing: LexiconTerm,
  signal: FeedbackSignal,
  now: number,
  policy: LexiconPolicy,
): TermDecision | null {
  if (existing.status !== 'active') return null;
  const step =
    signal === 'engaged' ? policy.engagedStep : signal === 'ignored' ? policy.ignoredStep : policy.unansweredStep;
  const weight = clampWeight(Math.max(policy.minWeight, existing.weight + step));
  if (weight === existing.weight) return null;
  const reasons: Record<FeedbackSignal, string> = {
    engaged: 'reinforced: the person followed up on the reply',
    ignored: 'weakened: replied, nobody followed up',
    unanswered: 'weakened: drew attention, no reply came of it',
  };
  return {
    change: step > 0 ? 'reinforced' : 'weakened',
    term: { ...existing, weight, ...(step > 0 ? { lastSeenAt: now } : {}) },
    reason: reasons[signal],
  };
}

/**
 * Time passing over one set: learned terms past their expiry or TTL expire, the others decay by their half-life
 * since `since` (the set's last maintenance or the term's last sighting, whichever is later) and leave once below
 * the minimum weight; then the set is brought back under its cap, weakest first. Pinned terms are never touched.
 * The decisions come in term id order, whatever order the set was read in (Redis returns a hash's fields in no
 * particular order): their order is the order of the set's events and part of their derived ids.
 */
export function maintainSet(
  terms: readonly LexiconTerm[],
  since: number,
  now: number,
  policy: LexiconPolicy,
): TermDecision[] {
  const decisions: TermDecision[] = [];
  const kept: LexiconTerm[] = [];
  for (const term of [...terms].sort(byTermId)) {
    const scope = policy.scopes[term.scope];
    const fading = term.status === 'active' && FADING_SOURCES.has(term.source);
    if (!fading) {
      kept.push(term);
      continue;
    }
    const unseen = now - term.lastSeenAt;
    if ((term.expiresAt !== null && term.expiresAt <= now) || (scope.ttlMs !== null && unseen >= scope.ttlMs)) {
      decisions.push({ change: 'expired', term, reason: `expired: not seen for ${humanDuration(unseen)}` });
      continue;
    }
    if (scope.halfLifeMs !== null) {
      const elapsed = now - Math.max(since, term.lastSeenAt);
      const weight = clampWeight(term.weight * 0.5 ** (Math.max(0, elapsed) / scope.halfLifeMs));
      if (weight < policy.minWeight) {
        decisions.push({ change: 'expired', term, reason: `expired: faded, not seen for ${humanDuration(unseen)}` });
        continue;
      }
      if (term.weight - weight >= 0.01) {
        const decayed = { ...term, weight };
        decisions.push({ change: 'decayed', term: decayed, reason: `decayed: not seen for ${humanDuration(unseen)}` });
        kept.push(decayed);
        continue;
      }
    }
    kept.push(term);
  }
  decisions.push(...overCap(kept, policy));
  return decisions;
}

/**
 * Terms to evict so the set's hitting terms fit its cap: the weakest unpinned ones, the least recently seen first
 * (then by term id, so the choice never depends on the order the set was read in).
 */
export function overCap(terms: readonly LexiconTerm[], policy: LexiconPolicy): TermDecision[] {
  const live = terms.filter((t) => t.status !== 'suppressed');
  if (live.length === 0) return [];
  const cap = policy.scopes[live[0]!.scope].cap;
  const excess = live.length - cap;
  if (excess <= 0) return [];
  return live
    .filter((t) => t.status === 'active')
    .sort((a, b) => a.weight - b.weight || a.lastSeenAt - b.lastSeenAt || byTermId(a, b))
    .slice(0, excess)
    .map((term) => ({
      change: 'evicted' as const,
      term,
      reason: `evicted: the ${term.scope} set is over its cap of ${cap}`,
    }));
}

/** A learned term that turned into chatter in its group (said in too large a share of messages) is suppressed there. */
export function suppressHighFrequency(
  term: LexiconTerm,
  docs: number,
  totalDocs: number,
  policy: LexiconPolicy,
): TermDecision | null {
  if (term.status !== 'active' || !LEARNED_SOURCES.has(term.source)) return null;
  if (!isHighFrequency(docs, totalDocs, policy)) return null;
  const share = Math.round((docs / totalDocs) * 100);
  return {
    change: 'suppressed',
    term: { ...term, status: 'suppressed' },
    reason: `suppressed: in ${share}% of the group's messages, no information`,
  };
}

function byTermId(a: LexiconTerm, b: LexiconTerm): number {
  return a.termId < b.termId ? -1 : a.termId > b.termId ? 1 : 0;
}

export function isHighFrequency(docs: number, totalDocs: number, policy: LexiconPolicy): boolean {
  return totalDocs >= policy.highFrequencyMinDocs && docs / totalDocs > policy.highFrequencyShare;
}

function humanDuration(ms: number): string {
  if (ms >= DAY) return `${Math.round(ms / DAY)} d`;
  if (ms >= HOUR) return `${Math.round(ms / HOUR)} h`;
  return `${Math.max(1, Math.round(ms / 60_000))} min`;
}
