import { compileSet } from './live-keyword-lookup.js';
import { learnTerm, setRef, type LexiconTerm } from './lexicon.rules.js';
import type { KeywordHit } from './keyword-lookup.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');
const ref = setRef('thread', '111/t1');

function term(text: string, weight: number, status: LexiconTerm['status'] = 'active'): LexiconTerm {
  const t = learnTerm(ref, { text, source: 'summary', weight, confidence: 0.6, why: 'test' }, undefined, T0)!.term;
  return { ...t, status };
}

function hits(terms: LexiconTerm[], text: string): KeywordHit[] {
  const out: KeywordHit[] = [];
  compileSet('thread:111/t1', 3, terms).matchInto(text, out);
  return out;
}

describe('compiled keyword set', () => {
  it('reports the thread id as the scope id, and the term\u2019s weight for an exact hit', () => {
    expect(hits([term('显卡', 0.4)], '显卡涨价了')).toEqual([
      expect.objectContaining({ term: '显卡', scope: 'thread', scopeId: 't1', weight: 0.4, start: 0, end: 2 }),
    ]);
  });

  it('counts a partial hit for half its weight times the share of bigrams found', () => {
    const [hit] = hits([term('原神启动', 0.6)], '原神怎么启动');
    expect(hit!.weight).toBeCloseTo(0.6 * 0.5 * (2 / 3));
  });

  it('never lets a suppressed term hit', () => {
    expect(hits([term('显卡', 0.4, 'suppressed')], '显卡涨价了')).toEqual([]);
  });
});
