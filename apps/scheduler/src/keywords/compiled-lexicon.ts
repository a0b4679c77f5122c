import type { KeywordScope, KeywordTermSource } from '@app/contracts';
import type { KeywordHit } from './keyword-lookup.js';
import type { FuzzyOptions } from './phrase-matcher.js';
import { termMatcher, type TermMatcher } from './small-phrase-matcher.js';

/*
 * One keyword set compiled for matching: its active and pinned terms (suppressed ones never hit) and their aliases
 * in one matcher (`termMatcher`: a scan for a small set, an automaton for a bigger one). Built off the hot path when
 * the set's version changes; `match` then reads the normalised text without allocating per pattern.
 */

export interface MatchableTerm {
  termId: string;
  /** Normalised canonical text. */
  text: string;
  /** Normalised aliases. */
  aliases: readonly string[];
  weight: number;
  confidence: number;
  /** Where the term came from (persona interests, an operator, learned …), when known. */
  source?: KeywordTermSource;
}

/** A partial (bigram) hit counts for this share of an exact one, times the share of bigrams found. */
export const PARTIAL_HIT_FACTOR = 0.5;

export class CompiledSet {
  private readonly matcher: TermMatcher;

  constructor(
    readonly scope: KeywordScope,
    /** The id hits report: '' for global, the group id, the thread id, … */
    readonly scopeId: string,
    readonly version: number,
    private readonly terms: readonly MatchableTerm[],
    fuzzy: Partial<FuzzyOptions> | false = {},
  ) {
    const patterns = terms.flatMap((term, index) =>
      [term.text, ...term.aliases]
        .filter((t, i, all) => t.length > 0 && all.indexOf(t) === i)
        .map((text) => ({ text, term: index })),
    );
    this.matcher = termMatcher(patterns, fuzzy);
  }

  get size(): number {
    return this.terms.length;
  }

  /** Hits of this set's terms in normalised `text`, appended to `into`. */
  matchInto(text: string, into: KeywordHit[]): void {
    for (const m of this.matcher.match(text)) {
      const term = this.terms[m.term]!;
      const factor = m.exact ? 1 : PARTIAL_HIT_FACTOR * m.coverage;
      into.push({
        termId: term.termId,
        term: term.text,
        scope: this.scope,
        scopeId: this.scopeId,
        weight: term.weight * factor,
        confidence: term.confidence * (m.exact ? 1 : m.coverage),
        start: m.start,
        end: m.end,
        ...(term.source ? { source: term.source } : {}),
      });
    }
  }
}

/** Strongest first; ties by position so the order is stable. */
export function byStrength(a: KeywordHit, b: KeywordHit): number {
  return b.weight - a.weight || a.start - b.start;
}
