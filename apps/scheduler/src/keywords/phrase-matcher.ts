import { isAsciiWordUnit } from './text.normaliser.js';

/*
 * A compiled multi-pattern matcher: Aho-Corasick over UTF-16 code units of normalised text, plus character
 * bigrams for partial hits of longer terms ("原神启动" hits "原神怎么启动" with 2 of its 3 bigrams).
 *
 * Written here rather than taken from npm (ADR-0020): the hot path needs term indices as outputs (several aliases
 * are one term), at most one hit per term without allocating per hit, Latin word boundaries and offsets; the
 * packages found (`ahocorasick`, `@monyone/aho-corasick`) return every (position, string) pair and leave the
 * rest to a second pass. The root's transitions are a dense table (most CJK positions restart at the root), the
 * others a small Map per state; failure and dictionary-suffix links make one pass over the text.
 */

export interface MatcherPattern {
  /** Normalised text of the term or one of its aliases. */
  text: string;
  /** The term it stands for; aliases of one term share it. */
  term: number;
}

export interface PhraseMatch {
  term: number;
  /** Offsets in the normalised text (end exclusive). */
  start: number;
  end: number;
  /** True when the whole pattern was found; false for a partial (bigram) hit. */
  exact: boolean;
  /** 1 for an exact hit; the share of the pattern's bigrams found for a partial one. */
  coverage: number;
}

export interface FuzzyOptions {
  /** Patterns shorter than this (code units) only hit exactly. Default 4. */
  minLength: number;
  /** Share of a pattern's distinct bigrams the text must contain. Default 0.6. */
  minCoverage: number;
}

const DEFAULT_FUZZY: FuzzyOptions = { minLength: 4, minCoverage: 0.6 };
const ROOT = 0;

export class PhraseMatcher {
  private readonly rootNext: Int32Array;
  private readonly next: (Map<number, number> | undefined)[];
  private readonly fail: Int32Array;
  /** The state itself when it ends a pattern, else its nearest suffix state that does (0: none). */
  private readonly firstOutput: Int32Array;
  private readonly dictLink: Int32Array;
  private readonly depth: Int32Array;
  private readonly outStart: Int32Array;
  private readonly outTerms: Int32Array;
  private readonly stamp: Int32Array;
  private generation = 0;

  private readonly gramPatterns = new Map<number, number[]>();
  private readonly patternGrams: number[] = [];
  private readonly patternTerm: number[] = [];
  private readonly gramCount: Int32Array;
  private readonly gramFirst: Int32Array;
  private readonly gramLast: Int32Array;
  private readonly fuzzy: FuzzyOptions | null;

  /** How many terms (distinct `term` values) and patterns were compiled. */
  readonly termCount: number;
  readonly patternCount: number;

  constructor(patterns: readonly MatcherPattern[], fuzzy: Partial<FuzzyOptions> | false = {}) {
    this.fuzzy = fuzzy === false ? null : { ...DEFAULT_FUZZY, ...fuzzy };
    const children: Map<number, number>[] = [new Map<number, number>()];
    const depth: number[] = [0];
    const outputs: (number[] | undefined)[] = [undefined];
    let maxTerm = -1;
    for (const pattern of patterns) {
      if (pattern.text.length === 0) continue;
      maxTerm = Math.max(maxTerm, pattern.term);
      let state = ROOT;
      for (let i = 0; i < pattern.text.length; i++) {
        const code = pattern.text.charCodeAt(i);
        let child = children[state]!.get(code);
        if (child === undefined) {
          child = children.length;
          children.push(new Map<number, number>());
          depth.push(i + 1);
          outputs.push(undefined);
          children[state]!.set(code, child);
        }
        state = child;
      }
      const out = (outputs[state] ??= []);
      if (!out.includes(pattern.term)) out.push(pattern.term);
    }
    const states = children.length;
    this.termCount = maxTerm + 1;
    this.patternCount = patterns.length;
    this.depth = Int32Array.from(depth);
    this.fail = new Int32Array(states);
    this.firstOutput = new Int32Array(states);
    this.dictLink = new Int32Array(states);
    this.rootNext = new Int32Array(0x10000);
    for (const [code, child] of children[ROOT]!) this.rootNext[code] = child;
    this.next = children.map((c, i) => (i === ROOT || c.size === 0 ? undefined : c));

    // Breadth-first: a state's failure link is the longest proper suffix that is also a trie path.
    const queue: number[] = [];
    for (const child of children[ROOT]!.values()) queue.push(child);
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head]!;
      const fail = this.fail[state]!;
      this.dictLink[state] = outputs[fail] ? fail : this.dictLink[fail]!;
      this.firstOutput[state] = outputs[state] ? state : this.dictLink[state];
      for (const [code, child] of children[state]!) {
        this.fail[child] = state === ROOT ? ROOT : this.step(fail, code);
        queue.push(child);
      }
    }

    const outStart = new Int32Array(states + 1);
    let total = 0;
    for (let s = 0; s < states; s++) {
      outStart[s] = total;
      total += outputs[s]?.length ?? 0;
    }
    outStart[states] = total;
    this.outStart = outStart;
    this.outTerms = new Int32Array(total);
    for (let s = 0; s < states; s++) this.outTerms.set(outputs[s] ?? [], outStart[s]);
    this.stamp = new Int32Array(Math.max(1, this.termCount));

    if (this.fuzzy) {
      for (const pattern of patterns) {
        if (pattern.text.length < this.fuzzy.minLength) continue;
        const index = this.patternTerm.length;
        const grams = new Set<number>();
        for (let i = 0; i + 1 < pattern.text.length; i++) grams.add(gramKey(pattern.text, i));
        for (const gram of grams) {
          const list = this.gramPatterns.get(gram);
          if (list) list.push(index);
          else this.gramPatterns.set(gram, [index]);
        }
        this.patternGrams.push(grams.size);
        this.patternTerm.push(pattern.term);
      }
    }
    this.gramCount = new Int32Array(this.patternTerm.length);
    this.gramFirst = new Int32Array(this.patternTerm.length);
    this.gramLast = new Int32Array(this.patternTerm.length);
  }

  /** The goto function with failure links followed (used while building and while matching). */
  private step(from: number, code: number): number {
    let state = from;
    for (;;) {
      if (state === ROOT) return this.rootNext[code]!;
      const next = this.next[state]?.get(code);
      if (next !== undefined) return next;
      state = this.fail[state]!;
    }
  }

  /** Terms hitting normalised `text`, at most one hit per term (its first exact hit, else its best partial one). */
  match(text: string): PhraseMatch[] {
    const hits: PhraseMatch[] = [];
    if (this.termCount === 0 || text.length === 0) return hits;
    const gen = this.nextGeneration();
    const { stamp, outTerms, outStart, depth, dictLink, firstOutput, rootNext, next, fail } = this;
    let state = ROOT;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      for (;;) {
        if (state === ROOT) {
          state = rootNext[code]!;
          break;
        }
        const to = next[state]?.get(code);
        if (to !== undefined) {
          state = to;
          break;
        }
        state = fail[state]!;
      }
      for (let out = firstOutput[state]!; out !== ROOT; out = dictLink[out]!) {
        const start = i + 1 - depth[out]!;
        for (let k = outStart[out]!, end = outStart[out + 1]!; k < end; k++) {
          const term = outTerms[k]!;
          if (stamp[term] === gen || !onWordBoundary(text, start, i + 1)) continue;
          stamp[term] = gen;
          hits.push({ term, start, end: i + 1, exact: true, coverage: 1 });
        }
      }
    }
    if (this.fuzzy && this.gramPatterns.size > 0 && text.length > 1) this.partialHits(text, gen, hits);
    return hits;
  }

  private partialHits(text: string, gen: number, hits: PhraseMatch[]): void {
    const { gramCount, gramFirst, gramLast, stamp } = this;
    const touched: number[] = [];
    const seen = new Set<number>();
    for (let i = 0; i + 1 < text.length; i++) {
      const key = gramKey(text, i);
      const patterns = this.gramPatterns.get(key);
      if (!patterns || seen.has(key)) continue;
      seen.add(key);
      for (const p of patterns) {
        if (stamp[this.patternTerm[p]!] === gen) continue;
        if (gramCount[p] === 0) {
          touched.push(p);
          gramFirst[p] = i;
        }
        gramCount[p]!++;
        gramLast[p] = i + 2;
      }
    }
    const best = new Map<number, PhraseMatch>();
    for (const p of touched) {
      const coverage = gramCount[p]! / this.patternGrams[p]!;
      gramCount[p] = 0;
      if (coverage < this.fuzzy!.minCoverage) continue;
      const term = this.patternTerm[p]!;
      const current = best.get(term);
      if (!current || coverage > current.coverage) {
        best.set(term, { term, start: gramFirst[p]!, end: gramLast[p]!, exact: false, coverage });
      }
    }
    for (const hit of best.values()) hits.push(hit);
  }

  private nextGeneration(): number {
    if (this.generation === 0x7fffffff) {
      this.stamp.fill(0);
      this.generation = 0;
    }
    return ++this.generation;
  }
}

function gramKey(text: string, i: number): number {
  return text.charCodeAt(i) * 0x10000 + text.charCodeAt(i + 1);
}

/** A term that starts or ends with a Latin letter or digit must not hit inside a longer Latin word ("go" in "google"). */
function onWordBoundary(text: string, start: number, end: number): boolean {
  if (isAsciiWordUnit(text.charCodeAt(start)) && start > 0 && isAsciiWordUnit(text.charCodeAt(start - 1))) {
    return false;
  }
  if (isAsciiWordUnit(text.charCodeAt(end - 1)) && end < text.length && isAsciiWordUnit(text.charCodeAt(end))) {
    return false;
  }
  return true;
}
