import { isHighFrequency, type LexiconPolicy } from './lexicon.rules.js';

/*
 * A group's candidate words before any is a lexicon term: in how many recent messages each was said, by whom, and
 * how many messages the group said in all. Working state of the keyword consumer (like memory's word counts), not
 * a fact in the log: only a promotion becomes one. Counts age by halving once the group has said `AGE_AFTER`
 * messages, so "recent" follows the group's pace rather than the clock, and the pool keeps at most `MAX_WORDS`.
 * A message reads and writes only its own words (and the total); the whole pool is read only to age it.
 */

export interface CandidateWord {
  docs: number;
  /** Up to a few distinct speakers (enough to tell one person's habit from a topic). */
  speakers: string[];
  lastAt: number;
}

export interface CandidatePool {
  totalDocs: number;
  words: Record<string, CandidateWord>;
}

export const AGE_AFTER = 1000;
export const MAX_WORDS = 1500;
const MAX_SPEAKERS = 5;

export function emptyPool(): CandidatePool {
  return { totalDocs: 0, words: wordTable() };
}

/**
 * A table of a pool's words, keyed by the word. Words are what people typed, so one may be `constructor` (or, from
 * another normaliser, `__proto__`): the table has no prototype, so a word is only ever an own key. On a plain object
 * `words['constructor']` answers with Object's function and the learning threw for any message saying it.
 */
export function wordTable(
  ...sources: (Record<string, CandidateWord> | Iterable<[string, CandidateWord]>)[]
): Record<string, CandidateWord> {
  const table = Object.create(null) as Record<string, CandidateWord>;
  for (const source of sources) {
    const entries: Iterable<[string, CandidateWord]> = Symbol.iterator in source ? source : Object.entries(source);
    for (const [word, value] of entries) table[word] = value;
  }
  return table;
}

export interface Sighting {
  word: string;
  docs: number;
  speakers: number;
  /** In too large a share of the group's messages to tell anything. */
  highFrequency: boolean;
  /** Said often enough, by enough people, to enter the group's set. */
  promotable: boolean;
}

/** One message's candidate words counted; returns the pool after and what each word now amounts to. */
export function sightWords(
  pool: CandidatePool,
  words: readonly string[],
  speaker: string,
  now: number,
  policy: LexiconPolicy,
): { pool: CandidatePool; sightings: Sighting[]; needsAging: boolean } {
  const next: CandidatePool = { totalDocs: pool.totalDocs + 1, words: wordTable(pool.words) };
  for (const word of new Set(words)) {
    const seen = next.words[word];
    const speakers = seen ? seen.speakers : [];
    next.words[word] = {
      docs: (seen?.docs ?? 0) + 1,
      speakers: speakers.includes(speaker) || speakers.length >= MAX_SPEAKERS ? speakers : [...speakers, speaker],
      lastAt: now,
    };
  }
  const sightings = [...new Set(words)]
    .filter((word) => next.words[word])
    .map((word) => {
      const w = next.words[word]!;
      const highFrequency = isHighFrequency(w.docs, next.totalDocs, policy);
      return {
        word,
        docs: w.docs,
        speakers: w.speakers.length,
        highFrequency,
        promotable: !highFrequency && w.docs >= policy.promoteSightings && w.speakers.length >= policy.promoteSpeakers,
      };
    });
  return { pool: next, sightings, needsAging: next.totalDocs > AGE_AFTER };
}

/**
 * The whole pool halved (words down to no count leave) and cut to `MAX_WORDS`, the most recently said first (then
 * the most said, then by the word itself: which words stay never depends on the order the pool was read in).
 */
export function agePool(pool: CandidatePool): CandidatePool {
  return capped(aged(pool));
}

function aged(pool: CandidatePool): CandidatePool {
  const words = wordTable();
  for (const [word, w] of Object.entries(pool.words)) {
    const docs = Math.floor(w.docs / 2);
    if (docs > 0) words[word] = { ...w, docs };
  }
  return { totalDocs: Math.floor(pool.totalDocs / 2), words };
}

function capped(pool: CandidatePool): CandidatePool {
  const entries = Object.entries(pool.words);
  if (entries.length <= MAX_WORDS) return pool;
  entries.sort(([wa, a], [wb, b]) => b.lastAt - a.lastAt || b.docs - a.docs || (wa < wb ? -1 : wa > wb ? 1 : 0));
  return { totalDocs: pool.totalDocs, words: wordTable(entries.slice(0, MAX_WORDS)) };
}
