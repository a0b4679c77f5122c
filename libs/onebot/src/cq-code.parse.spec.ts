import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCqString, unescapeCqParam, unescapeCqText } from './cq-code.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/onebot');

function fixture(name: string): { raw_message: string; message: { type: string; data: Record<string, unknown> }[] } {
  return JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as never;
}

describe('CQ string parsing', () => {
  it('splits text and codes in order', () => {
    expect(parseCqString('[CQ:reply,id=1]hi [CQ:at,qq=20001] there[CQ:face,id=120]')).toEqual([
      { type: 'reply', data: { id: '1' } },
      { type: 'text', data: { text: 'hi ' } },
      { type: 'at', data: { qq: '20001' } },
      { type: 'text', data: { text: ' there' } },
      { type: 'face', data: { id: '120' } },
    ]);
  });

  it('handles plain text, empty strings and parameterless codes', () => {
    expect(parseCqString('just text')).toEqual([{ type: 'text', data: { text: 'just text' } }]);
    expect(parseCqString('')).toEqual([]);
    expect(parseCqString('[CQ:shake]')).toEqual([{ type: 'shake', data: {} }]);
    expect(parseCqString('[CQ:shake][CQ:shake]')).toHaveLength(2);
  });

  it('decodes text escapes but leaves a comma entity in text alone (text never escapes commas)', () => {
    expect(parseCqString('a &amp; b &#91;x&#93; &#44;')).toEqual([{ type: 'text', data: { text: 'a & b [x] &#44;' } }]);
  });

  it('decodes parameter escapes, including commas', () => {
    expect(parseCqString('[CQ:mface,summary=&#91;摸头&#93;,key=a&#44;b&amp;c]')).toEqual([
      { type: 'mface', data: { summary: '[摸头]', key: 'a,b&c' } },
    ]);
  });

  it('decodes in one pass: an escaped ampersand before "#91;" stays literal', () => {
    expect(unescapeCqText('&amp;#91;')).toBe('&#91;');
    expect(unescapeCqParam('&amp;#44;')).toBe('&#44;');
    expect(parseCqString('[CQ:text,text=&amp;#93;]')).toEqual([{ type: 'text', data: { text: '&#93;' } }]);
  });

  it('keeps everything after the first "=" of a parameter (URLs)', () => {
    expect(parseCqString('[CQ:image,url=https://x/d?a=1&amp;b=2,file=f.png]')).toEqual([
      { type: 'image', data: { url: 'https://x/d?a=1&b=2', file: 'f.png' } },
    ]);
  });

  it('treats what only looks like a code as text', () => {
    expect(parseCqString('[CQ:at,qq=1')).toEqual([{ type: 'text', data: { text: '[CQ:at,qq=1' } }]);
    expect(parseCqString('a]b[c')).toEqual([{ type: 'text', data: { text: 'a]b[c' } }]);
    expect(parseCqString('[CQ:]')).toEqual([{ type: 'text', data: { text: '[CQ:]' } }]);
    expect(parseCqString('x [CQ:at,qq=1')).toEqual([{ type: 'text', data: { text: 'x [CQ:at,qq=1' } }]);
  });

  it('keeps a flag parameter without "=" as an empty value', () => {
    expect(parseCqString('[CQ:dice,,result=3,flag]')).toEqual([{ type: 'dice', data: { result: '3', flag: '' } }]);
  });

  it('agrees with the array format NapCat sends for the same message (raw_message vs message)', () => {
    const card = fixture('message-private/json-miniapp-share-napcat.json');
    expect(parseCqString(card.raw_message)).toEqual([{ type: 'json', data: card.message[0]!.data }]);
    const file = fixture('message-private/file-napcat.json');
    expect(parseCqString(file.raw_message)[0]?.data.file).toBe(file.message[0]!.data.file);
    const mface = fixture('message-group/mface-napcat.json');
    expect(parseCqString(mface.raw_message)[0]?.data.summary).toBe('[摸头]');
    const images = fixture('message-group/reply-atall-at-images-napcat.json');
    const parsed = parseCqString(images.raw_message);
    expect(parsed.map((s) => s.type)).toEqual(images.message.map((s) => s.type));
    expect(parsed[4]?.data.url).toBe(images.message[4]!.data.url);
  });
});
