import fc from 'fast-check';
import { normaliseText } from './text.normaliser.js';

describe('normaliseText', () => {
  it('folds full-width Latin, digits and punctuation to half width and case to lower', () => {
    expect(normaliseText('ＡＰＥＸ英雄１２３！')).toBe('apex英雄123!');
    expect(normaliseText('Steam DECK')).toBe('steam deck');
  });

  it('collapses whitespace, ideographic spaces included, and trims', () => {
    expect(normaliseText('  原神\u3000\u3000启动 \n 了 ')).toBe('原神 启动 了');
  });

  it('leaves the script alone unless a folding is given', () => {
    expect(normaliseText('遊戲')).toBe('遊戲');
    const fold = (t: string) => t.replace(/遊/g, '游').replace(/戲/g, '戏');
    expect(normaliseText('遊戲', { foldScript: fold })).toBe('游戏');
  });
});

describe('normaliseText fast path', () => {
  it('gives what NFKC, lower-casing and whitespace folding give (property)', () => {
    const alphabet = fc.constantFrom(
      '原',
      '神',
      'a',
      'Z',
      ' ',
      '  ',
      '\u3000',
      'Ａ',
      '１',
      '!',
      '！',
      '\n',
      '遊',
      'ﬁ',
      '㎏',
    );
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 30 }), (chars) => {
        const text = chars.join('');
        const slow = text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();
        expect(normaliseText(text)).toBe(slow);
      }),
      { numRuns: 1000 },
    );
  });
});
