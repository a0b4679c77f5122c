import { parseStickers } from './sticker-set.js';

describe('sticker set', () => {
  it('reads a list of stickers with descriptions', () => {
    expect(
      parseStickers('- id: cat_ok\n  file: https://example.invalid/ok.png\n  description: 猫猫点头\n', 's.yaml'),
    ).toEqual([{ id: 'cat_ok', file: 'https://example.invalid/ok.png', description: '猫猫点头' }]);
    expect(parseStickers('stickers:\n  - {id: a, file: f, description: d}\n', 's.yaml')).toHaveLength(1);
  });

  it('names bad entries', () => {
    expect(() => parseStickers('- id: Bad Id\n  file: f\n  description: d\n- id: ok\n', 's.yaml')).toThrow(
      /0\.id must match.*1\.file is required/,
    );
    expect(() => parseStickers('just text', 's.yaml')).toThrow(expect.objectContaining({ code: 'STICKERS.INVALID' }));
  });
});
