import { AGE_AFTER, agePool, emptyPool, MAX_WORDS, sightWords, type CandidatePool } from './candidate-pool.rules.js';
import { DEFAULT_LEXICON_POLICY as POLICY } from './lexicon.rules.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');

function say(pool: CandidatePool, speaker: string, ...words: string[]) {
  const out = sightWords(pool, words, speaker, T0, POLICY);
  return out.needsAging ? { ...out, pool: agePool(out.pool) } : out;
}

describe('candidate pool', () => {
  it('makes a word promotable after enough messages by enough people', () => {
    let pool = emptyPool();
    pool = say(pool, 'a', '原神').pool;
    pool = say(pool, 'a', '原神').pool;
    expect(say(pool, 'a', '原神').sightings[0]).toMatchObject({ docs: 3, speakers: 1, promotable: false });
    expect(say(pool, 'b', '原神').sightings[0]).toMatchObject({ docs: 3, speakers: 2, promotable: true });
  });

  it('counts a word once per message', () => {
    expect(say(emptyPool(), 'a', '原神', '原神').sightings).toHaveLength(1);
  });

  it('flags a word in too large a share of the group\u2019s messages as high-frequency, never promotable', () => {
    let pool = emptyPool();
    for (let i = 0; i < 60; i++) pool = say(pool, `u${i % 5}`, ...(i % 2 === 0 ? ['上班'] : ['别的', `词${i}`])).pool;
    const [sighting] = say(pool, 'u1', '上班').sightings;
    expect(sighting).toMatchObject({ highFrequency: true, promotable: false });
  });

  it('ages counts as the group talks, so old words fall out', () => {
    let pool = say(emptyPool(), 'a', '旧词').pool;
    for (let i = 0; i < AGE_AFTER + 1; i++) pool = say(pool, 'a', '新词').pool;
    expect(pool.words['旧词']).toBeUndefined();
    expect(pool.totalDocs).toBeLessThan(AGE_AFTER);
  });

  it('asks for aging only when the group has said enough, and aging keeps the pool under its cap', () => {
    const big: CandidatePool = { totalDocs: AGE_AFTER, words: {} };
    for (let i = 0; i < MAX_WORDS + 50; i++) big.words[`词${i}`] = { docs: 3, speakers: ['a'], lastAt: T0 + i };
    expect(sightWords({ totalDocs: 10, words: {} }, ['词'], 'a', T0, POLICY).needsAging).toBe(false);
    const { pool, needsAging } = sightWords(big, ['新'], 'a', T0, POLICY);
    expect(needsAging).toBe(true);
    const aged = agePool(pool);
    expect(Object.keys(aged.words)).toHaveLength(MAX_WORDS);
    expect(aged.words['新']).toBeUndefined();
    expect(aged.words[`词${MAX_WORDS + 49}`]).toEqual({ docs: 1, speakers: ['a'], lastAt: T0 + MAX_WORDS + 49 });
  });

  it('counts words that are names of Object.prototype like any other word, and ages them like any other', () => {
    const words = ['constructor', '__proto__', 'tostring', 'hasOwnProperty'];
    let pool = say(emptyPool(), 'a', ...words).pool;
    pool = say(pool, 'b', ...words).pool;
    for (const word of words) expect(pool.words[word]).toEqual({ docs: 2, speakers: ['a', 'b'], lastAt: T0 });
    expect(Object.keys(pool.words).sort()).toEqual([...words].sort());
    expect(say(pool, 'c', 'constructor').sightings[0]).toMatchObject({ word: 'constructor', docs: 3, speakers: 3 });
    // A pool read back from Redis is a plain object: its `constructor` is only a word once it has been said.
    const read: CandidatePool = { totalDocs: 5, words: { 别的: { docs: 1, speakers: ['a'], lastAt: T0 } } };
    expect(say(read, 'a', 'constructor').sightings[0]).toMatchObject({ word: 'constructor', docs: 1 });
    const aged = agePool({ totalDocs: AGE_AFTER + 1, words: { ...pool.words } });
    expect(Object.keys(aged.words).sort()).toEqual([...words].sort());
    expect(aged.words['__proto__']).toEqual({ docs: 1, speakers: ['a', 'b'], lastAt: T0 });
  });

  it('keeps the same words whatever order the pool was read in, when words tie at the cap', () => {
    const words = Array.from({ length: MAX_WORDS + 20 }, (_, i) => `词${i}`);
    const entry = { docs: 4, speakers: ['a'], lastAt: T0 };
    const forward: CandidatePool = { totalDocs: AGE_AFTER + 1, words: {} };
    const backward: CandidatePool = { totalDocs: AGE_AFTER + 1, words: {} };
    for (const word of words) forward.words[word] = entry;
    for (const word of [...words].reverse()) backward.words[word] = entry;
    const kept = (pool: CandidatePool) => Object.keys(agePool(pool).words).sort();
    expect(kept(forward)).toHaveLength(MAX_WORDS);
    expect(kept(forward)).toEqual(kept(backward));
  });
});
