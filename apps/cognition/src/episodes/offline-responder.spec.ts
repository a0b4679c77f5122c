import { cutText, OfflineResponder, offlineReplyText } from '@app/llm';
import { decideToolCall, EPISODE_TOOLS } from './tool-call.rules.js';

describe('offline responder', () => {
  const responder = new OfflineResponder();
  const request = (subjectText?: string) => ({
    role: 'replyer' as const,
    messages: [{ role: 'user' as const, content: '…' }],
    tools: EPISODE_TOOLS,
    toolChoice: 'required' as const,
    ...(subjectText !== undefined ? { subjectText } : {}),
  });

  it('answers with a valid reply tool call that says it is offline and quotes the message', async () => {
    const response = await responder.complete(request('晚上吃啥'));
    const decision = decideToolCall(response);
    expect(decision).toMatchObject({ ok: true, kind: 'reply' });
    if (decision.ok && decision.kind === 'reply') {
      expect(decision.text).toBe(
        '（离线模式）收到「晚上吃啥」。我还没接上语言模型，配置 OPENAI_API_KEY 后就能正常聊天啦。',
      );
    }
    expect(response.model).toBe('offline');
    expect(response.usage).toEqual({ promptTokens: 0, completionTokens: 0 });
  });

  it('is deterministic', async () => {
    const a = await responder.complete(request('同一句话'));
    const b = await responder.complete(request('同一句话'));
    expect(a.toolCalls[0]!.arguments).toBe(b.toolCalls[0]!.arguments);
  });

  it('cuts a long message without splitting characters and copes with none', () => {
    expect(offlineReplyText('一二三四五六七八九十一二三四五六七八九十还有')).toContain(
      '「一二三四五六七八九十一二三四五六七八九十…」',
    );
    expect(cutText('😀'.repeat(30), 3)).toBe('😀😀😀…');
    expect(offlineReplyText(undefined)).toContain('收到你的消息');
    expect(offlineReplyText('  ')).toContain('收到你的消息');
  });
});
