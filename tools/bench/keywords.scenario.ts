import { performance } from 'node:perf_hooks';
import { CompiledSet, type MatchableTerm } from '../../apps/scheduler/src/keywords/compiled-lexicon.js';
import type { KeywordHit } from '../../apps/scheduler/src/keywords/keyword-lookup.js';
import { normaliseText } from '../../apps/scheduler/src/keywords/text.normaliser.js';
import { round } from './load.js';

/*
 * The keyword matcher's throughput: `terms` lexicon terms (CJK, 2–6 characters, a third with an alias) over
 * `megabytes` of synthetic CJK chat lines, each line normalised and matched the way attention does it (exact
 * Aho-Corasick hits plus bigram partial hits). The same run times a naive matcher, a per-term `includes` loop
 * over the same normalised lines, on a sample of them (it is too slow for all), and reports the ratio.
 */

export interface KeywordsOptions {
  terms: number;
  megabytes: number;
}

/** CJK Unified Ideographs from the commonest block, enough variety for 10k distinct terms. */
const FIRST = 0x4e00;
const SPAN = 3000;

function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function word(random: () => number, min: number, max: number): string {
  const length = min + Math.floor(random() * (max - min + 1));
  let out = '';
  for (let i = 0; i < length; i++) out += String.fromCharCode(FIRST + Math.floor(random() * SPAN));
  return out;
}

export function keywordCorpus(options: KeywordsOptions): { terms: MatchableTerm[]; lines: string[]; bytes: number } {
  const random = prng(20_261_201);
  const seen = new Set<string>();
  const terms: MatchableTerm[] = [];
  while (terms.length < options.terms) {
    const text = word(random, 2, 6);
    if (seen.has(text)) continue;
    seen.add(text);
    const aliases = random() < 0.33 ? [word(random, 2, 4)] : [];
    terms.push({ termId: `t${terms.length}`, text, aliases, weight: 0.2 + random() * 0.8, confidence: 0.8 });
  }
  const lines: string[] = [];
  let bytes = 0;
  const target = options.megabytes * 1024 * 1024;
  while (bytes < target) {
    let line = word(random, 8, 40);
    if (random() < 0.3) line += terms[Math.floor(random() * terms.length)]!.text + word(random, 2, 20);
    if (random() < 0.1) line += `，ＯＫ ${word(random, 2, 10)}？`;
    lines.push(line);
    bytes += Buffer.byteLength(line, 'utf8');
  }
  return { terms, lines, bytes };
}

function naiveMatch(terms: readonly MatchableTerm[], text: string): number {
  let hits = 0;
  for (const term of terms) {
    if (text.includes(term.text) || term.aliases.some((a) => text.includes(a))) hits++;
  }
  return hits;
}

export function keywords(options: KeywordsOptions): Promise<Record<string, unknown>> {
  const { terms, lines, bytes } = keywordCorpus(options);
  const compileStarted = performance.now();
  const set = new CompiledSet('group', 'bench', 1, terms);
  const compileMs = performance.now() - compileStarted;

  // Warm up, then time the whole corpus.
  for (let i = 0; i < Math.min(2000, lines.length); i++) set.matchInto(normaliseText(lines[i]!), []);
  let matched = 0;
  const started = performance.now();
  for (const line of lines) {
    const out: KeywordHit[] = [];
    set.matchInto(normaliseText(line), out);
    matched += out.length;
  }
  const seconds = (performance.now() - started) / 1000;

  const sample = lines.slice(0, Math.max(200, Math.floor(lines.length / 50)));
  const sampleBytes = sample.reduce((sum, l) => sum + Buffer.byteLength(l, 'utf8'), 0);
  let naiveHits = 0;
  const naiveStarted = performance.now();
  for (const line of sample) naiveHits += naiveMatch(terms, normaliseText(line));
  const naiveSeconds = (performance.now() - naiveStarted) / 1000;

  const mbPerSec = bytes / 1024 / 1024 / seconds;
  const naiveMbPerSec = sampleBytes / 1024 / 1024 / naiveSeconds;
  return Promise.resolve({
    terms: terms.length,
    patterns: terms.reduce((n, t) => n + 1 + t.aliases.length, 0),
    megabytes: round(bytes / 1024 / 1024, 2),
    lines: lines.length,
    compileMs: round(compileMs, 1),
    mbPerSec: round(mbPerSec, 1),
    naiveMbPerSec: round(naiveMbPerSec, 2),
    speedupVsNaive: round(mbPerSec / naiveMbPerSec, 1),
    hits: matched,
    naiveSampleLines: sample.length,
    naiveSampleHits: naiveHits,
    goals: { mbPerSec: 50, speedupVsNaive: 20 },
  });
}
