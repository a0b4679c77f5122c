import { isAsciiWordUnit } from './text.normaliser.js';

/*
 * A compiled multi-pattern matcher: Aho-Corasick over UTF-16 code units of normalised text, plus character
 * bigrams for partial hits of longer terms ("原神启动" hits "原神怎么启动" with 2 of its 3 bigrams).
 *
 * Written here rather than taken from npm (ADR-0020): the hot path needs term indices as outputs (several aliases
 * are one term), at most one hit per term without allocating per hit, Latin word boundaries and offsets; the
 * packages found (`ahocorasick`, `@monyone/aho-corasick`) return every (position, string) pair and leave the
 * rest to a second pass. The root's transitions are a dense table (most CJK positions restart at the root), the
 * others one open-addressing hash table over (state, code unit) in typed arrays, and the bigrams another one: a
 * Map per state was three times slower on 10k CJK terms (the `keywords` bench). Failure and dictionary-suffix links
 * make one pass over the text.
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

export const DEFAULT_FUZZY: FuzzyOptions = { minLength: 4, minCoverage: 0.6 };
const ROOT = 0;
/** The root's key in the transition table (0 marks an empty slot there). */
const ROOT_KEY = -1;
/** Distinct first characters from which the root gets a dense table. */
const DENSE_ROOT_AT = 512;

export class PhraseMatcher {
  /** The root's transitions as a dense table, for sets with many first characters; small sets use `edges`. */
  private readonly rootNext: Int32Array | null;
  private readonly edges: TransitionTable;
  private readonly fail: Int32Array;
  /** The state itself when it ends a pattern, else its nearest suffix state that does (0: none). */
  private readonly firstOutput: Int32Array;
  private readonly dictLink: Int32Array;
  private readonly depth: Int32Array;
  private readonly outStart: Int32Array;
  private readonly outTerms: Int32Array;
  private readonly stamp: Int32Array;
  private generation = 0;

  private readonly fuzzy: FuzzyOptions | null;
  private readonly grams: GramTable;
  /** Per gram (CSR): the fuzzy patterns that contain it. */
  private readonly gramStart: Int32Array;
  private readonly gramPatterns: Int32Array;
  private readonly gramStamp: Int32Array;
  private readonly patternGrams: Int32Array;
  private readonly patternTerm: Int32Array;
  private readonly gramCount: Int32Array;
  private readonly gramFirst: Int32Array;
  private readonly gramLast: Int32Array;

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
    // A 64K table is 256 KB: worth it for a big set (every CJK position restarts at the root), not for the
    // thousands of small group sets a scheduler holds.
    this.rootNext = children[ROOT]!.size >= DENSE_ROOT_AT ? new Int32Array(0x10000) : null;
    this.edges = new TransitionTable(states);
    for (const [code, child] of children[ROOT]!) {
      if (this.rootNext) this.rootNext[code] = child;
      else this.edges.set(ROOT_KEY, code, child);
    }
    for (let s = 1; s < states; s++) for (const [code, child] of children[s]!) this.edges.set(s, code, child);

    // Breadth-first: a state's failure link is the longest proper suffix that is also a trie path.
    const queue: number[] = [...children[ROOT]!.values()];
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

    // Bigrams of the patterns long enough for partial hits, each gram → the patterns holding it.
    const gramLists: number[][] = [];
    const patternGrams: number[] = [];
    const patternTerm: number[] = [];
    this.grams = new GramTable(this.fuzzy ? patterns.length * 8 : 0);
    if (this.fuzzy) {
      for (const pattern of patterns) {
        if (pattern.text.length < this.fuzzy.minLength) continue;
        const index = patternTerm.length;
        const own = new Set<number>();
        for (let i = 0; i + 1 < pattern.text.length; i++) {
          const gram = this.grams.intern(gramKey(pattern.text, i));
          if (own.has(gram)) continue;
          own.add(gram);
          (gramLists[gram] ??= []).push(index);
        }
        patternGrams.push(own.size);
        patternTerm.push(pattern.term);
      }
    }
    this.gramStart = new Int32Array(gramLists.length + 1);
    let grams = 0;
    gramLists.forEach((list, g) => {
      this.gramStart[g] = grams;
      grams += list.length;
    });
    this.gramStart[gramLists.length] = grams;
    this.gramPatterns = new Int32Array(grams);
    gramLists.forEach((list, g) => this.gramPatterns.set(list, this.gramStart[g]));
    this.gramStamp = new Int32Array(gramLists.length);
    this.patternGrams = Int32Array.from(patternGrams);
    this.patternTerm = Int32Array.from(patternTerm);
    this.gramCount = new Int32Array(patternTerm.length);
    this.gramFirst = new Int32Array(patternTerm.length);
    this.gramLast = new Int32Array(patternTerm.length);
  }

  /** The goto function with failure links followed (used while building and while matching). */
  private step(from: number, code: number): number {
    let state = from;
    for (;;) {
      if (state === ROOT) return this.rootNext ? this.rootNext[code]! : this.edges.get(ROOT_KEY, code);
      const next = this.edges.get(state, code);
      if (next !== 0) return next;
      state = this.fail[state]!;
    }
  }

  /** Terms hitting normalised `text`, at most one hit per term (its first exact hit, else its best partial one). */
  match(text: string): PhraseMatch[] {
    const hits: PhraseMatch[] = [];
    if (this.termCount === 0 || text.length === 0) return hits;
    const gen = this.nextGeneration();
    const { stamp, outTerms, outStart, depth, dictLink, firstOutput, rootNext, edges, fail } = this;
    const { grams, gramStamp, gramStart, gramPatterns, gramCount, gramFirst, gramLast } = this;
    // Bigrams are counted in the same pass (one read of the text); terms that hit exactly are left out at the end.
    const partial = this.fuzzy !== null && this.patternTerm.length > 0;
    let touched: number[] | undefined;
    let prev = -1;
    let state = ROOT;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      for (;;) {
        if (state === ROOT) {
          state = rootNext ? rootNext[code]! : edges.get(ROOT_KEY, code);
          break;
        }
        const to = edges.get(state, code);
        if (to !== 0) {
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
      if (partial && prev >= 0) {
        const gram = grams.find((prev << 16) | code);
        if (gram >= 0 && gramStamp[gram] !== gen) {
          gramStamp[gram] = gen;
          for (let k = gramStart[gram]!, end = gramStart[gram + 1]!; k < end; k++) {
            const p = gramPatterns[k]!;
            if (gramCount[p] === 0) {
              (touched ??= []).push(p);
              gramFirst[p] = i - 1;
            }
            gramCount[p]!++;
            gramLast[p] = i + 1;
          }
        }
      }
      prev = code;
    }
    if (touched) this.partialHits(touched, gen, hits);
    return hits;
  }

  /** The best partial hit of each term that did not hit exactly, from the bigram counts of `touched` patterns. */
  private partialHits(touched: readonly number[], gen: number, hits: PhraseMatch[]): void {
    const { gramCount, gramFirst, gramLast, stamp, patternTerm } = this;
    const best = new Map<number, PhraseMatch>();
    for (const p of touched) {
      const coverage = gramCount[p]! / this.patternGrams[p]!;
      gramCount[p] = 0;
      const term = patternTerm[p]!;
      if (coverage < this.fuzzy!.minCoverage || stamp[term] === gen) continue;
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
      this.gramStamp.fill(0);
      this.generation = 0;
    }
    return ++this.generation;
  }
}

/** Open addressing over (state, code unit) → next state, linear probing, load ≤ 1/2; 0 means "no edge". */
class TransitionTable {
  private readonly mask: number;
  private readonly states: Int32Array;
  private readonly codes: Uint16Array;
  private readonly targets: Int32Array;

  constructor(edges: number) {
    const size = 1 << Math.max(4, Math.ceil(Math.log2(Math.max(1, edges) * 2)));
    this.mask = size - 1;
    this.states = new Int32Array(size);
    this.codes = new Uint16Array(size);
    this.targets = new Int32Array(size);
  }

  set(state: number, code: number, target: number): void {
    let slot = hashPair(state, code) & this.mask;
    while (this.states[slot] !== 0) slot = (slot + 1) & this.mask;
    this.states[slot] = state;
    this.codes[slot] = code;
    this.targets[slot] = target;
  }

  get(state: number, code: number): number {
    const { states, codes, mask } = this;
    for (let slot = hashPair(state, code) & mask; ; slot = (slot + 1) & mask) {
      const s = states[slot]!;
      if (s === 0) return 0;
      if (s === state && codes[slot] === code) return this.targets[slot]!;
    }
  }
}

/** Open addressing over bigram keys → dense gram indices. */
class GramTable {
  private readonly mask: number;
  private readonly keys: Int32Array;
  private readonly used: Uint8Array;
  private readonly values: Int32Array;
  private count = 0;

  constructor(capacity: number) {
    const size = 1 << Math.max(4, Math.ceil(Math.log2(Math.max(1, capacity) * 2)));
    this.mask = size - 1;
    this.keys = new Int32Array(size);
    this.used = new Uint8Array(size);
    this.values = new Int32Array(size);
  }

  intern(key: number): number {
    let slot = hashKey(key) & this.mask;
    while (this.used[slot] === 1) {
      if (this.keys[slot] === key) return this.values[slot]!;
      slot = (slot + 1) & this.mask;
    }
    this.used[slot] = 1;
    this.keys[slot] = key;
    this.values[slot] = this.count;
    return this.count++;
  }

  find(key: number): number {
    const { keys, used, mask } = this;
    for (let slot = hashKey(key) & mask; used[slot] === 1; slot = (slot + 1) & mask) {
      if (keys[slot] === key) return this.values[slot]!;
    }
    return -1;
  }
}

function hashPair(state: number, code: number): number {
  return Math.imul(state ^ (code << 15), 0x9e3779b1) >>> 7;
}

function hashKey(key: number): number {
  return Math.imul(key, 0x9e3779b1) >>> 9;
}

/** Two code units as one int32 (the sign bit is part of the key). */
function gramKey(text: string, i: number): number {
  return (text.charCodeAt(i) << 16) | text.charCodeAt(i + 1);
}

/** A term that starts or ends with a Latin letter or digit must not hit inside a longer Latin word ("go" in "google"). */
export function onWordBoundary(text: string, start: number, end: number): boolean {
  if (isAsciiWordUnit(text.charCodeAt(start)) && start > 0 && isAsciiWordUnit(text.charCodeAt(start - 1))) {
    return false;
  }
  if (isAsciiWordUnit(text.charCodeAt(end - 1)) && end < text.length && isAsciiWordUnit(text.charCodeAt(end))) {
    return false;
  }
  return true;
}
