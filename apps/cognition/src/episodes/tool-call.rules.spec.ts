import { decideToolCall, EPISODE_TOOLS, REPLY_MAX_CHARS } from './tool-call.rules.js';

const call = (name: string, args: string) => ({ content: null, toolCalls: [{ id: 'c1', name, arguments: args }] });

describe('tool call validation', () => {
  it('offers reply and no_reply with JSON schemas', () => {
    expect(EPISODE_TOOLS.map((t) => t.name)).toEqual(['reply', 'no_reply']);
    expect(EPISODE_TOOLS[0]!.parameters).toMatchObject({ required: ['text'] });
  });

  it('accepts a good reply, with and without quote', () => {
    expect(decideToolCall(call('reply', '{"text":" 吃火锅 ","quote":true}'))).toMatchObject({
      ok: true,
      kind: 'reply',
      text: '吃火锅',
      quote: true,
      source: 'tool',
    });
    expect(decideToolCall(call('reply', '{"text":"好"}'))).toMatchObject({ ok: true, quote: false });
  });

  it('accepts no_reply with a reason', () => {
    expect(decideToolCall(call('no_reply', '{"reason":"不是在跟我说话"}'))).toMatchObject({
      ok: true,
      kind: 'no_reply',
      reason: '不是在跟我说话',
    });
  });

  it('rejects an unknown tool', () => {
    expect(decideToolCall(call('send_emoji', '{}'))).toMatchObject({ ok: false, reason: 'unknown_tool' });
  });

  it('rejects arguments that are not a JSON object', () => {
    expect(decideToolCall(call('reply', '{"text": "半截'))).toMatchObject({ ok: false, reason: 'bad_json' });
    expect(decideToolCall(call('reply', '"just a string"'))).toMatchObject({ ok: false, reason: 'bad_json' });
  });

  it('rejects a reply without text, with blank text, or with a number', () => {
    for (const args of ['{}', '{"text":""}', '{"text":"   "}', '{"text":42}']) {
      const decision = decideToolCall(call('reply', args));
      expect(decision).toMatchObject({ ok: false, reason: 'invalid_arguments' });
      if (!decision.ok) expect(decision.fields.map((f) => f.path)).toEqual(['text']);
    }
    expect(decideToolCall(call('no_reply', '{}'))).toMatchObject({ ok: false, reason: 'invalid_arguments' });
  });

  it('rejects a reply that is too long', () => {
    const ok = decideToolCall(call('reply', JSON.stringify({ text: '好'.repeat(REPLY_MAX_CHARS) })));
    expect(ok.ok).toBe(true);
    const long = decideToolCall(call('reply', JSON.stringify({ text: '好'.repeat(REPLY_MAX_CHARS + 1) })));
    expect(long).toMatchObject({ ok: false, reason: 'invalid_arguments' });
  });

  it('rejects a quote that is not a boolean', () => {
    expect(decideToolCall(call('reply', '{"text":"好","quote":"yes"}'))).toMatchObject({ ok: false });
  });

  it('takes plain text without a tool call as the reply, and nothing at all as invalid', () => {
    expect(decideToolCall({ content: '  哈哈哈  ', toolCalls: [] })).toMatchObject({
      ok: true,
      kind: 'reply',
      text: '哈哈哈',
      source: 'content',
    });
    expect(decideToolCall({ content: '', toolCalls: [] })).toMatchObject({ ok: false, reason: 'no_tool_call' });
    expect(decideToolCall({ content: null, toolCalls: [] })).toMatchObject({ ok: false, reason: 'no_tool_call' });
  });

  it('gives the model a Chinese hint naming the problem', () => {
    const decision = decideToolCall(call('reply', '{}'));
    expect(decision.ok).toBe(false);
    if (!decision.ok) expect(decision.hint).toMatch(/reply 的参数不对（text）/);
  });
});
