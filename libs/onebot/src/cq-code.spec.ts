import { parseCqString, renderPlainText, toCqString } from './cq-code.js';

describe('CQ codes', () => {
  it('round-trips segments through a CQ string, escaping what the spec says', () => {
    const segments = [
      { type: 'at', data: { qq: '10001' } },
      { type: 'text', data: { text: ' a&b [c], d' } },
      { type: 'image', data: { file: 'x,y.jpg' } },
    ];
    const cq = toCqString(segments);
    expect(cq).toBe('[CQ:at,qq=10001] a&amp;b &#91;c&#93;, d[CQ:image,file=x&#44;y.jpg]');
    expect(parseCqString(cq)).toEqual(segments);
  });

  it('renders what a person would read', () => {
    expect(renderPlainText('[CQ:face,id=178]看看我刚拍的照片[CQ:image,file=123.jpg]')).toBe(
      '[表情]看看我刚拍的照片[图片]',
    );
    expect(
      renderPlainText([
        { type: 'reply', data: { id: '5' } },
        { type: 'at', data: { qq: '20006', name: 'Bob' } },
        { type: 'text', data: { text: ' 你好' } },
      ]),
    ).toBe('[回复:5]@Bob 你好');
  });
});
