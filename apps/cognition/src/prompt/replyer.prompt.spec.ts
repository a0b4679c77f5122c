import type { ContextMessage, MessagePayload } from '@app/contracts';
import { effectivePersona, parsePersona } from '@app/persona';
import { buildReplyerPrompt, CONTEXT_LIMIT, SECTION, SELF_MARK } from './replyer.prompt.js';

const persona = parsePersona({
  identity: { name: '林小满', aliases: ['小满'], description: '大三学生，住宿舍。' },
  values: ['真诚'],
  mood: '平静',
  interests: ['猫', '做饭'],
  participationBias: 0.4,
  curiosity: 0.8,
  sociability: 0.6,
  patience: 0.5,
  toolBias: 0.2,
  speakingStyle: '口语、简短',
  groupOverrides: { '30001': { notes: '大学同学群' } },
  routine: [],
});

// 2025-05-13 12:00:00 in Asia/Shanghai.
const NOON = Date.UTC(2025, 4, 13, 4, 0, 0) / 1000;

const trigger: MessagePayload = {
  messageType: 'group',
  selfId: '10001',
  messageId: '9001',
  groupName: '摸鱼研究所',
  sender: { userId: '20001', nickname: 'zhen', card: '阿珍', displayName: '阿珍', role: 'admin' },
  segments: [{ type: 'text', data: { text: '小满晚上吃啥' } }],
  text: '@小满 晚上吃啥',
  truncated: false,
  mentionsSelf: true,
  directReason: 'at',
  sentAt: NOON + 65,
};

function line(i: number, userId: string, name: string, text: string, fromSelf = false): ContextMessage {
  return { eventId: `e${i}`, messageId: `m${i}`, userId, displayName: name, text, sentAt: NOON + i, fromSelf };
}

function prompt(context: ContextMessage[], payload: MessagePayload = trigger, groupId: string | null = '30001') {
  const messages = buildReplyerPrompt({
    persona: effectivePersona(persona, groupId),
    selfId: '10001',
    groupId,
    trigger: payload,
    context,
    activity: null,
    now: new Date((NOON + 70) * 1000),
  });
  return { messages, text: messages.map((m) => m.content).join('\n\n') };
}

describe('replyer prompt', () => {
  it('puts the persona in the system message and every ADR §14 section in order', () => {
    const { messages, text } = prompt([line(1, '20002', '阿强', '今天好热')]);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[0]!.content.startsWith(SECTION.persona)).toBe(true);
    const order = Object.values(SECTION).map((heading) => text.indexOf(heading));
    expect(order.every((position) => position >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it('describes the persona, the sender and the group', () => {
    const { text } = prompt([]);
    expect(text).toContain('你是「林小满」');
    expect(text).toContain('你的 QQ 号是 10001');
    expect(text).toContain('阿珍（QQ 20001）');
    expect(text).toContain('管理员');
    expect(text).toContain('「摸鱼研究所」（群号 30001）');
    expect(text).toContain('大学同学群');
    expect(text).toContain('5月13日 周二 12:01');
  });

  it('shows the current message with its time, sender and why it is addressed to the bot', () => {
    const { text } = prompt([]);
    const current = text.slice(text.indexOf(SECTION.current), text.indexOf(SECTION.rules));
    expect(current).toContain('[12:01:05] 阿珍(20001): @小满 晚上吃啥');
    expect(current).toContain('@ 了你');
  });

  it('keeps the newest background lines only, oldest first, and never repeats the trigger', () => {
    const context = Array.from({ length: 20 }, (_, i) => line(i, '20002', '阿强', `消息${i}`));
    context.push({ ...line(30, '20001', '阿珍', '@小满 晚上吃啥'), messageId: trigger.messageId });
    const { text } = prompt(context);
    const recent = text.slice(text.indexOf(SECTION.recent), text.indexOf(SECTION.current));
    const shown = recent.split('\n').filter((l) => l.startsWith('['));
    expect(shown).toHaveLength(CONTEXT_LIMIT);
    expect(shown[0]).toContain('消息8');
    expect(shown[shown.length - 1]).toContain('消息19');
    expect(recent).not.toContain('晚上吃啥');
  });

  it("marks the bot's own lines", () => {
    const { text } = prompt([line(1, '20002', '阿强', '小满在吗'), line(2, 'self', 'self', '在的', true)]);
    expect(text).toContain(`[12:00:02] ${SELF_MARK}林小满(10001): 在的`);
    expect(text).toContain('[12:00:01] 阿强(20002): 小满在吗');
  });

  it('gives every message its own line with its own sender, never merging senders', () => {
    const { text } = prompt([
      line(1, '20002', '阿强', '我先说'),
      line(2, '20003', '小美', '我接着说'),
      line(3, '20003', '小美', '还有一句\n第二行'),
    ]);
    expect(text).toContain('[12:00:01] 阿强(20002): 我先说\n[12:00:02] 小美(20003): 我接着说\n');
    expect(text).toContain('[12:00:03] 小美(20003): 还有一句\n    第二行');
  });

  it('says "no earlier messages" and a private chat plainly', () => {
    const { text } = prompt([], { ...trigger, messageType: 'private', directReason: 'private' }, null);
    expect(text).toContain('（没有更早的消息）');
    expect(text).toContain('私聊，不在群里');
    expect(text).toContain('私聊消息');
    expect(text).not.toContain('管理员');
  });

  it('states the speaking rules', () => {
    const { text } = prompt([]);
    const rules = text.slice(text.indexOf(SECTION.rules));
    for (const phrase of [
      '只回应【当前消息】',
      '不要逐条回复',
      '不要混在一起',
      '口语、简短',
      '不要自称 AI',
      '只输出要发出去的那句话本身',
    ]) {
      expect(rules).toContain(phrase);
    }
  });

  it('adds provided sections (memory, thread), the planner intent and a hook prompt, and fragments of the same sender only', () => {
    const messages = buildReplyerPrompt({
      persona: effectivePersona(persona, '30001'),
      selfId: '10001',
      groupId: '30001',
      trigger,
      fragments: [
        { ...trigger, messageId: '8999', text: '先问一句', sentAt: NOON + 60 },
        {
          ...trigger,
          messageId: '8998',
          text: '别人的话',
          sentAt: NOON + 61,
          sender: { ...trigger.sender, userId: '29999' },
        },
      ],
      context: [],
      activity: null,
      sections: { memory: '阿珍上周说她在减肥。', thread: '话题：晚饭', activity: '在图书馆写作业' },
      intent: '推荐清淡的',
      extraPrompt: '这次要更热情一点。',
      now: new Date((NOON + 70) * 1000),
    });
    const text = messages.map((m) => m.content).join('\n');
    expect(text).toContain(`${SECTION.memory}\n阿珍上周说她在减肥。`);
    expect(text).toContain('话题：晚饭');
    expect(text).toContain('在图书馆写作业');
    expect(text).toContain('想表达的意思（用你自己的话说，不要照抄）：推荐清淡的');
    expect(text).toContain('这次要更热情一点。');
    const current = text.slice(text.indexOf(SECTION.current), text.indexOf(SECTION.rules));
    expect(current).toContain('先问一句');
    expect(current).not.toContain('别人的话');
  });

  it('shows what the same sender added while the bot was thinking after the answered message, as part of it', () => {
    const messages = buildReplyerPrompt({
      persona: effectivePersona(persona, '30001'),
      groupId: '30001',
      trigger,
      followUps: [
        { ...trigger, messageId: '9001', text: '对了还有一件事', sentAt: NOON + 90 },
        {
          ...trigger,
          messageId: '9002',
          text: '插一句',
          sentAt: NOON + 91,
          sender: { ...trigger.sender, userId: '2' },
        },
      ],
      context: [],
      activity: null,
      now: new Date((NOON + 95) * 1000),
    });
    const text = messages.map((m) => m.content).join('\n');
    const current = text.slice(text.indexOf(SECTION.current), text.indexOf(SECTION.rules));
    expect(current.indexOf('对了还有一件事')).toBeGreaterThan(current.indexOf(trigger.text));
    expect(current).not.toContain('插一句');
  });
});
