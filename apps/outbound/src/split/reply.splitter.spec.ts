import { planSegments, splitReply } from './reply.splitter.js';

const squash = (s: string): string => s.replace(/\s+/g, '');
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Deterministic pseudo-random text with CJK, ASCII, punctuation, newlines and emoji (including ZWJ sequences). */
function randomText(seed: number, length: number): string {
  const pieces = ['你', '好', '群', 'a', 'b', ' ', '，', '。', '！', '?', '\n', '😀', '👨‍👩‍👧', '🇨🇳', '…', '”', 'é'];
  let x = seed;
  let out = '';
  while (out.length < length) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out += pieces[x % pieces.length];
  }
  return out;
}

describe('reply splitter (the reply path: lines first, then sentences)', () => {
  it('sends a one-line reply that fits as one message', () => {
    expect(splitReply('  好的，我知道了。明天见！  ', { maxChars: 20 })).toEqual(['好的，我知道了。明天见！']);
  });

  it('sends a reply with line breaks line by line, skipping blank lines', () => {
    expect(splitReply('第一行\n\n第二行\r\n第三行', { maxChars: 20 })).toEqual(['第一行', '第二行', '第三行']);
  });

  it('gives nothing for a blank reply', () => {
    expect(splitReply(' \n\t ', { maxChars: 20 })).toEqual([]);
  });

  it('cuts a long line after a sentence end (with its closing quote)', () => {
    const text = '他说：“好的！”然后就走了。我们都没想到他会这样做，真是太突然了。';
    const parts = splitReply(text, { maxChars: 20 });
    expect(parts[0]).toBe('他说：“好的！”然后就走了。');
    expect(parts.join('')).toBe(text);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(20);
  });

  it('never cuts inside an emoji or a surrogate pair, even with no break anywhere', () => {
    const text = '😀'.repeat(15) + '👨‍👩‍👧'.repeat(5);
    const parts = splitReply(text, { maxChars: 21 });
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(21);
      expect(LONE_SURROGATE.test(part)).toBe(false);
      expect(part.startsWith('\u200d')).toBe(false);
    }
    expect(parts.join('')).toBe(text);
  });

  it('caps the number of messages by joining neighbours, losing nothing', () => {
    const lines = Array.from({ length: 8 }, (_, i) => `第${i}行`);
    const parts = splitReply(lines.join('\n'), { maxChars: 30, maxSegments: 5 });
    expect(parts).toHaveLength(5);
    expect(parts.join('\n').split('\n')).toEqual(lines);
    const text = Array.from({ length: 12 }, (_, i) => `第${i}句话说得很长很长很长。`).join('');
    const sentences = splitReply(text, { maxChars: 30, maxSegments: 5 });
    expect(sentences).toHaveLength(5);
    expect(sentences.join('')).toBe(text);
  });

  it('keeps every character in order and within the caps, for random texts', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const text = randomText(seed, 20 + (seed % 400));
      const maxChars = 20 + (seed % 60);
      const parts = splitReply(text, { maxChars });
      expect(squash(parts.join(''))).toBe(squash(text));
      expect(parts.length).toBeLessThanOrEqual(5);
      for (const part of parts) {
        expect(part.length).toBeGreaterThan(0);
        expect(LONE_SURROGATE.test(part)).toBe(false);
      }
    }
  });

  it('quotes the answered message in the first segment only', () => {
    const plan = planSegments('一二三四五六七八九十。'.repeat(2), { maxChars: 20, quoteMessageId: '2096329721' });
    expect(plan.map((s) => [s.index, s.count, s.quoteMessageId])).toEqual([
      [0, 2, '2096329721'],
      [1, 2, undefined],
    ]);
    expect(planSegments('hi', { maxChars: 20 })[0]).toEqual({ index: 0, count: 1, text: 'hi' });
  });
});
