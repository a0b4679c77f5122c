import { dedupThought, REFLECTION_PROMPT, similarity } from './thought-dedup.rules.js';

describe('thought dedup', () => {
  it('measures similarity from 0 to 1', () => {
    expect(similarity('我想想', '我想想')).toBe(1);
    expect(similarity('abc', 'xyz')).toBe(0);
    expect(similarity('  我 想想 ', '我 想想')).toBe(1);
  });

  it('replaces a thought more than 90% like the previous one with the reflection prompt', () => {
    const previous = '他在问晚饭吃什么，我推荐火锅吧，天冷了正合适';
    expect(dedupThought(`${previous}。`, previous)).toMatchObject({ replaced: true, text: REFLECTION_PROMPT });
    expect(dedupThought('他问晚饭，我还是推荐面条吧', previous)).toMatchObject({ replaced: false });
    expect(dedupThought(previous, null)).toMatchObject({ replaced: false, text: previous });
  });
});
