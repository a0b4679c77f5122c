import fc from 'fast-check';
import { PhraseMatcher, type MatcherPattern } from './phrase-matcher.js';

function exactTerms(matcher: PhraseMatcher, text: string): number[] {
  return matcher
    .match(text)
    .filter((h) => h.exact)
    .map((h) => h.term)
    .sort((a, b) => a - b);
}

/** The oracle: a term hits when one of its patterns occurs on a Latin word boundary (naive `indexOf` loop). */
function naiveTerms(patterns: readonly MatcherPattern[], text: string): number[] {
  const word = (c: string | undefined) => c !== undefined && /[a-z0-9]/.test(c);
  const hit = new Set<number>();
  for (const p of patterns) {
    if (p.text === '') continue;
    for (let at = text.indexOf(p.text); at >= 0; at = text.indexOf(p.text, at + 1)) {
      const end = at + p.text.length;
      const badStart = word(p.text[0]) && word(text[at - 1]);
      const badEnd = word(p.text[p.text.length - 1]) && word(text[end]);
      if (!badStart && !badEnd) {
        hit.add(p.term);
        break;
      }
    }
  }
  return [...hit].sort((a, b) => a - b);
}

describe('PhraseMatcher', () => {
  it('finds every term in one pass, overlapping and nested ones included', () => {
    const patterns = [
      { text: '原神', term: 0 },
      { text: '原神启动', term: 1 },
      { text: '神启', term: 2 },
      { text: '启动', term: 3 },
    ];
    const matcher = new PhraseMatcher(patterns);
    const hits = matcher.match('今天原神启动了吗');
    expect(hits.map((h) => [h.term, h.start, h.end])).toEqual([
      [0, 2, 4],
      [2, 3, 5],
      [1, 2, 6],
      [3, 4, 6],
    ]);
  });

  it('gives at most one hit per term, whichever alias and however often it occurs', () => {
    const matcher = new PhraseMatcher([
      { text: '原神', term: 0 },
      { text: 'genshin', term: 0 },
    ]);
    const hits = matcher.match('原神 genshin 原神原神');
    expect(hits).toHaveLength(1);
    expect(hits[0]).toMatchObject({ term: 0, start: 0, end: 2, exact: true });
  });

  it('does not hit a Latin term inside a longer Latin word', () => {
    const matcher = new PhraseMatcher([{ text: 'go', term: 0 }]);
    expect(matcher.match('i use google')).toEqual([]);
    expect(matcher.match('go语言')).toHaveLength(1);
    expect(matcher.match('学go')).toHaveLength(1);
  });

  it('hits a longer term partially from its bigrams, never a short one', () => {
    const matcher = new PhraseMatcher([
      { text: '原神启动', term: 0 },
      { text: '显卡', term: 1 },
    ]);
    const [hit] = matcher.match('原神怎么启动啊');
    expect(hit).toMatchObject({ term: 0, exact: false });
    expect(hit!.coverage).toBeCloseTo(2 / 3);
    expect(matcher.match('显示卡')).toEqual([]);
    expect(new PhraseMatcher([{ text: '原神启动', term: 0 }], false).match('原神怎么启动啊')).toEqual([]);
  });

  it('agrees with a naive indexOf loop on exact hits (property)', () => {
    const alphabet = fc.constantFrom('原', '神', '启', '动', 'a', 'b', ' ', '了');
    const word = fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(
        fc.array(fc.record({ text: word, term: fc.integer({ min: 0, max: 9 }) }), { minLength: 1, maxLength: 25 }),
        fc.array(alphabet, { maxLength: 40 }).map((cs) => cs.join('')),
        (patterns, text) => {
          const matcher = new PhraseMatcher(patterns);
          expect(exactTerms(matcher, text)).toEqual(naiveTerms(patterns, text));
          for (const hit of matcher.match(text).filter((h) => h.exact)) {
            const found = text.slice(hit.start, hit.end);
            expect(patterns.some((p) => p.term === hit.term && p.text === found)).toBe(true);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('agrees with the oracle when the set is big enough for a dense root table', () => {
    const patterns = Array.from({ length: 2000 }, (_, i) => ({
      text: String.fromCharCode(0x4e00 + i) + String.fromCharCode(0x4e00 + ((i * 7) % 2000)),
      term: i,
    }));
    const matcher = new PhraseMatcher(patterns, false);
    const noise = Array.from({ length: 300 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 13) % 2100))).join('');
    const text = `${noise}${patterns[5]!.text}了${patterns[1999]!.text}${noise}`;
    expect(exactTerms(matcher, text)).toEqual(naiveTerms(patterns, text));
    expect(exactTerms(matcher, text).length).toBeGreaterThan(0);
  });

  it('agrees with a naive bigram count on partial hits (property)', () => {
    const alphabet = fc.constantFrom('原', '神', '启', '动', '了', '吗');
    const word = fc.array(alphabet, { minLength: 1, maxLength: 6 }).map((cs) => cs.join(''));
    const bigrams = (t: string) =>
      new Set(Array.from({ length: Math.max(0, t.length - 1) }, (_, i) => t.slice(i, i + 2)));
    fc.assert(
      fc.property(
        fc.array(fc.record({ text: word, term: fc.integer({ min: 0, max: 5 }) }), { minLength: 1, maxLength: 12 }),
        fc.array(alphabet, { maxLength: 30 }).map((cs) => cs.join('')),
        (patterns, text) => {
          const matcher = new PhraseMatcher(patterns);
          const exact = new Set(naiveTerms(patterns, text));
          const inText = bigrams(text);
          const expected = new Set<number>();
          for (const p of patterns) {
            if (p.text.length < 4 || exact.has(p.term)) continue;
            const own = bigrams(p.text);
            const found = [...own].filter((g) => inText.has(g)).length;
            if (found / own.size >= 0.6) expected.add(p.term);
          }
          const partial = matcher
            .match(text)
            .filter((h) => !h.exact)
            .map((h) => h.term)
            .sort((a, b) => a - b);
          expect(partial).toEqual([...expected].sort((a, b) => a - b));
        },
      ),
      { numRuns: 500 },
    );
  });
});
