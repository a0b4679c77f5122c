import {
  DEFAULT_FUZZY,
  onWordBoundary,
  PhraseMatcher,
  type FuzzyOptions,
  type MatcherPattern,
  type PhraseMatch,
} from './phrase-matcher.js';

/*
 * The matcher of a small keyword set: the same hits as `PhraseMatcher`, found with `indexOf` per pattern instead of
 * an automaton. A scheduler holds one compiled set per group and thread; most hold a handful of learned terms, and
 * a `PhraseMatcher` over one term still costs ≈ 4.5 kB of typed arrays (some twenty of them, each with its own
 * backing store), ≈ 45 MB at 10,000 groups (docs/BENCHMARKS.md, scheduler-memory). This one keeps the patterns and
 * their bigrams only. For a few patterns a scan per pattern is as fast as one automaton pass over a chat message;
 * past `SMALL_SET_PATTERNS` the automaton wins, so bigger sets still get one.
 */

/** What a compiled set matches with. */
export interface TermMatcher {
  readonly termCount: number;
  readonly patternCount: number;
  /** Terms hitting normalised `text`, at most one hit per term (its first exact hit, else its best partial one). */
  match(text: string): PhraseMatch[];
}

/** Sets with at most this many patterns (terms and aliases) are matched by scanning. */
export const SMALL_SET_PATTERNS = 8;

/** The matcher for `patterns`: a scan for a small set, an automaton for a bigger one. */
export function termMatcher(
  patterns: readonly MatcherPattern[],
  fuzzy: Partial<FuzzyOptions> | false = {},
): TermMatcher {
  return patterns.length <= SMALL_SET_PATTERNS
    ? new SmallPhraseMatcher(patterns, fuzzy)
    : new PhraseMatcher(patterns, fuzzy);
}

interface ExactCandidate {
  term: number;
  start: number;
  end: number;
  /** The index of the term's first pattern with this text: the automaton reports terms of one state in that order. */
  order: number;
}

export class SmallPhraseMatcher implements TermMatcher {
  private readonly patterns: readonly MatcherPattern[];
  private readonly fuzzy: FuzzyOptions | null;
  /** Per pattern long enough for partial hits: its distinct bigrams, in order of first occurrence. */
  private readonly grams: (readonly string[] | null)[];
  readonly termCount: number;
  readonly patternCount: number;

  constructor(patterns: readonly MatcherPattern[], fuzzy: Partial<FuzzyOptions> | false = {}) {
    this.patterns = patterns;
    this.fuzzy = fuzzy === false ? null : { ...DEFAULT_FUZZY, ...fuzzy };
    this.patternCount = patterns.length;
    let maxTerm = -1;
    for (const p of patterns) if (p.text.length > 0) maxTerm = Math.max(maxTerm, p.term);
    this.termCount = maxTerm + 1;
    const minLength = this.fuzzy?.minLength;
    this.grams = this.patterns.map((p) => {
      if (minLength === undefined || p.text.length < minLength) return null;
      const own: string[] = [];
      for (let i = 0; i + 1 < p.text.length; i++) {
        const gram = p.text.slice(i, i + 2);
        if (!own.includes(gram)) own.push(gram);
      }
      return own;
    });
  }

  match(text: string): PhraseMatch[] {
    const hits: PhraseMatch[] = [];
    if (this.termCount === 0 || text.length === 0) return hits;
    // Exact: each term's first occurrence on a word boundary, by end, the longer first at one end (the automaton's
    // dictionary links go from the longest suffix down), then by the order its state lists the terms.
    const firstOf = new Map<number, ExactCandidate>();
    this.patterns.forEach((pattern, index) => {
      const { text: needle, term } = pattern;
      if (needle.length === 0) return;
      for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
        const end = at + needle.length;
        if (!onWordBoundary(text, at, end)) continue;
        const hit = { term, start: at, end, order: index };
        const current = firstOf.get(term);
        if (!current || before(hit, current)) firstOf.set(term, hit);
        break;
      }
    });
    const exact = [...firstOf.values()].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
    for (const hit of exact) hits.push({ term: hit.term, start: hit.start, end: hit.end, exact: true, coverage: 1 });
    if (this.fuzzy) this.partialHits(text, firstOf, hits);
    return hits;
  }

  /**
   * The best partial hit of each term that did not hit exactly. Each distinct bigram of the text counts at its first
   * occurrence; a pattern's hit spans from its first counted bigram to the end of its last one; patterns are weighed
   * in the order the text first touched them, the earlier one winning a tie.
   */
  private partialHits(text: string, exact: ReadonlyMap<number, ExactCandidate>, hits: PhraseMatch[]): void {
    const touched: { index: number; first: number; last: number; coverage: number }[] = [];
    this.grams.forEach((grams, index) => {
      if (!grams || grams.length === 0) return;
      let found = 0;
      let first = Number.POSITIVE_INFINITY;
      let last = -1;
      for (const gram of grams) {
        const at = text.indexOf(gram);
        if (at < 0) continue;
        found++;
        first = Math.min(first, at);
        last = Math.max(last, at + 2);
      }
      if (found > 0) touched.push({ index, first, last, coverage: found / grams.length });
    });
    touched.sort((a, b) => a.first - b.first || a.index - b.index);
    const best = new Map<number, PhraseMatch>();
    for (const p of touched) {
      const term = this.patterns[p.index]!.term;
      if (p.coverage < this.fuzzy!.minCoverage || exact.has(term)) continue;
      const current = best.get(term);
      if (!current || p.coverage > current.coverage) {
        best.set(term, { term, start: p.first, end: p.last, exact: false, coverage: p.coverage });
      }
    }
    for (const hit of best.values()) hits.push(hit);
  }
}

/** Whether exact hit `a` is reported before `b`. */
function before(a: ExactCandidate, b: ExactCandidate): boolean {
  if (a.end !== b.end) return a.end < b.end;
  const aLength = a.end - a.start;
  const bLength = b.end - b.start;
  if (aLength !== bLength) return aLength > bLength;
  return a.order < b.order;
}
