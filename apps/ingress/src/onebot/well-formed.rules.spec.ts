import { wellFormed } from './well-formed.rules.js';

describe('wellFormed', () => {
  it('replaces lone surrogates with U+FFFD wherever they are, and counts the strings', () => {
    const input = {
      text: 'hi \ud800 there',
      segments: [
        { type: 'text', data: { text: 'a\udc00' } },
        { type: 'face', data: { id: '1' } },
      ],
      sender: { nickname: '小满😀' },
    };
    const { value, repaired } = wellFormed(input);
    expect(repaired).toBe(2);
    expect(value.text).toBe('hi \ufffd there');
    expect(value.segments[0]!.data.text).toBe('a\ufffd');
    expect(JSON.parse(JSON.stringify(value))).toEqual(value);
    expect(input.text).toBe('hi \ud800 there');
  });

  it('keeps well-formed text (paired surrogates included) as the same object', () => {
    const input = { text: '猫猫😺', list: ['a', 'b'] };
    const { value, repaired } = wellFormed(input);
    expect(repaired).toBe(0);
    expect(value).toBe(input);
  });
});
