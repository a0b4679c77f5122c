import { cutText, OfflineResponder, offlineReplyText } from './offline-responder.js';

describe('offline responder', () => {
  const responder = new OfflineResponder();
  const replyTool = (properties: Record<string, unknown>) => ({
    name: 'reply',
    description: '',
    parameters: { type: 'object', properties },
  });

  it('plans a reply to the subject message, and writes the labelled offline text as the replyer', async () => {
    const planned = await responder.complete({
      role: 'planner',
      messages: [{ role: 'user', content: '…' }],
      tools: [replyTool({ msg_id: { type: 'string' } })],
      toolChoice: 'required',
      subjectMessageId: '123',
    });
    expect(planned.toolCalls).toEqual([{ id: expect.any(String), name: 'reply', arguments: '{"msg_id":"123"}' }]);
    const written = await responder.complete({
      role: 'replyer',
      messages: [{ role: 'user', content: '…' }],
      subjectText: '晚上吃啥',
    });
    expect(written.content).toBe(
      '（离线模式）收到「晚上吃啥」。我还没接上语言模型，配置 OPENAI_API_KEY 后就能正常聊天啦。',
    );
    expect(written.model).toBe('offline');
    expect(written.usage).toEqual({ promptTokens: 0, completionTokens: 0 });
  });

  it('answers older callers whose reply tool takes the text', async () => {
    const answer = await responder.complete({
      role: 'utils',
      messages: [],
      tools: [replyTool({ text: {} })],
      toolChoice: 'required',
      subjectText: 'x',
    });
    expect(JSON.parse(answer.toolCalls[0]!.arguments)).toEqual({ text: offlineReplyText('x') });
  });

  it('cuts a long message without splitting characters and copes with none', () => {
    expect(offlineReplyText('一二三四五六七八九十一二三四五六七八九十还有')).toContain(
      '「一二三四五六七八九十一二三四五六七八九十…」',
    );
    expect(cutText('😀'.repeat(30), 3)).toBe('😀😀😀…');
    expect(offlineReplyText(undefined)).toContain('收到你的消息');
  });
});
