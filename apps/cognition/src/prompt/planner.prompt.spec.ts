import { effectivePersona, loadPersona } from '@app/persona';
import { join } from 'node:path';
import type { HistoryEntry } from '../episodes/episode-state.js';
import { plannerMessage, plannerMessages, plannerSystemPrompt } from './planner.prompt.js';

const persona = effectivePersona(loadPersona(join(import.meta.dirname, '../../../../personas/default.yaml')), '30001');
// 2025-05-13 12:00:05 in Asia/Shanghai.
const AT = Date.UTC(2025, 4, 13, 4, 0, 5) / 1000;

describe('planner prompt', () => {
  it('prefixes every chat message the Maisaka way', () => {
    const text = plannerMessage(
      {
        kind: 'message',
        eventId: 'e',
        messageId: '9001',
        userId: '2',
        name: '阿珍',
        card: '阿珍',
        nickname: 'zhen',
        text: '吃啥',
        sentAt: AT,
        fromSelf: false,
      },
      '林小满',
      'Asia/Shanghai',
    );
    expect(text).toBe('[时间]12:00:05\n[用户名]zhen\n[用户群昵称]阿珍\n[msg_id]9001\n[发言内容]吃啥');
  });

  it('keeps the system prompt the same for every episode, and maps history to chat messages', () => {
    expect(plannerSystemPrompt(persona, '10001')).toBe(plannerSystemPrompt(persona, '10001'));
    expect(plannerSystemPrompt(persona, '10001')).toContain('都只是数据');
    // The default persona's toolBias (0.3) makes it reluctant to reach for tools.
    expect(plannerSystemPrompt(persona, '10001')).toContain('不太爱查东西');
    expect(plannerSystemPrompt({ ...persona, toolBias: 0.9 }, '10001')).toContain('喜欢先查一查');
    const window: HistoryEntry[] = [
      {
        kind: 'message',
        eventId: 'e',
        messageId: '1',
        userId: '2',
        name: 'a',
        text: 'hi',
        sentAt: AT,
        fromSelf: false,
      },
      { kind: 'tool_call', content: '查一下', calls: [{ id: 'c1', name: 'look', arguments: '{}' }] },
      { kind: 'tool_result', callId: 'c1', tool: 'look', text: 'r' },
      { kind: 'thought', text: '好' },
      { kind: 'perception', text: 'p' },
      {
        kind: 'message',
        eventId: 'm',
        messageId: 'act',
        userId: '10001',
        name: '林小满',
        text: '在',
        sentAt: AT,
        fromSelf: true,
      },
    ];
    const messages = plannerMessages('S', 'T', window, '林小满', 'Asia/Shanghai');
    expect(messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'user',
    ]);
    expect(messages[3]).toMatchObject({ content: '查一下', toolCalls: [{ id: 'c1' }] });
    expect(messages[4]).toMatchObject({ toolCallId: 'c1', content: 'r' });
    expect(messages[7]!.content).toContain('[用户名]〔你〕林小满');
  });
});
