import fc from 'fast-check';
import { PhraseMatcher, type MatcherPattern } from './phrase-matcher.js';
import { SMALL_SET_PATTERNS, SmallPhraseMatcher, termMatcher } from './small-phrase-matcher.js';

describe('SmallPhraseMatcher', () => {
  // Few characters, so patterns overlap, nest, repeat and share bigrams; Latin letters exercise word boundaries.
  const alphabet = fc.constantFrom('原', '神', '启', '动', '了', 'a', 'b', ' ');
  const word = fc.array(alphabet, { minLength: 0, maxLength: 6 }).map((cs) => cs.join(''));
  const patterns = fc.array(fc.record({ text: word, term: fc.integer({ min: 0, max: 4 }) }), {
    minLength: 0,
    maxLength: SMALL_SET_PATTERNS,
  });
  const text = fc.array(alphabet, { maxLength: 40 }).map((cs) => cs.join(''));
  const fuzzy = fc.oneof(
    fc.constant(false as const),
    fc.record({ minLength: fc.integer({ min: 2, max: 5 }), minCoverage: fc.constantFrom(0.3, 0.5, 0.6, 1) }),
  );

  it('reports exactly what the automaton reports: the same hits, offsets, coverage and order (property)', () => {
    fc.assert(
      fc.property(patterns, text, fuzzy, (set: MatcherPattern[], message, options) => {
        const expected = new PhraseMatcher(set, options).match(message);
        expect(new SmallPhraseMatcher(set, options).match(message)).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it('counts terms as the automaton does: distinct terms of non-empty patterns', () => {
    fc.assert(
      fc.property(patterns, (set) => {
        const small = new SmallPhraseMatcher(set);
        const automaton = new PhraseMatcher(set);
        expect([small.termCount, small.patternCount]).toEqual([automaton.termCount, automaton.patternCount]);
      }),
    );
  });

  it('is what a small set gets; a bigger one gets the automaton', () => {
    const set = (n: number) => Array.from({ length: n }, (_, i) => ({ text: `原神${i}`, term: i }));
    expect(termMatcher(set(SMALL_SET_PATTERNS))).toBeInstanceOf(SmallPhraseMatcher);
    expect(termMatcher(set(SMALL_SET_PATTERNS + 1))).toBeInstanceOf(PhraseMatcher);
  });

  it('finds a learned term, an alias and a partial hit in a chat line', () => {
    const matcher = new SmallPhraseMatcher([
      { text: '原神启动', term: 0 },
      { text: 'ys', term: 1 },
      { text: '崩坏星穹铁道', term: 2 },
    ]);
    expect(matcher.match('今晚ys一起吗 原神怎么启动 星穹铁道')).toEqual([
      { term: 1, start: 2, end: 4, exact: true, coverage: 1 },
      { term: 0, start: 8, end: 14, exact: false, coverage: 2 / 3 },
      { term: 2, start: 15, end: 19, exact: false, coverage: 0.6 },
    ]);
    expect(matcher.match('keys')).toEqual([]);
  });
});
