import {
  zonedParts,
  type ContextMessage,
  type MessagePayload,
  type PromptSection,
  type SenderRole,
} from '@app/contracts';
import type { EffectivePersona } from '@app/persona';
import type { ChatMessage } from '@app/llm';

/*
 * The replyer's prompt (ADR §14): one message to answer, from one sender, with the situation around it. The
 * planner decided *that* the bot speaks and to whom; the replyer decides the words.
 */

/** The newest messages shown as background (ADR §14: 8–12). */
export const CONTEXT_LIMIT = 12;

/** What the persona is doing now (ADR §10), filled from the life line once cognition reads it. */
export interface ActivityView {
  title: string;
  description: string;
  startedAt: Date;
  /** 0–1. */
  progress: number;
  recentBeat?: string;
  next?: string;
}

/** Text of the sections other modules provide (life line, memory, sender profile, thread, jargon). */
export type ProvidedSections = Partial<Record<PromptSection, string>>;

export interface EpisodePromptInput {
  persona: EffectivePersona;
  /** Provided sections; `activity` here wins over `activity` below. */
  sections?: ProvidedSections;
  /** The planner's guidance on what to get across (never sent as is). */
  intent?: string;
  /** Extra instructions from a `replyer.before_request` hook. */
  extraPrompt?: string;
  /** The bot's own QQ number, when configured. */
  selfId?: string;
  groupId: string | null;
  trigger: MessagePayload;
  /** Earlier messages of the same sender answered together with `trigger` (debounced fragments), oldest first. */
  fragments?: MessagePayload[];
  /** Messages of the same sender after the trigger, taken in while the episode ran, oldest first. */
  followUps?: MessagePayload[];
  /** Messages before the trigger, oldest first. */
  context: ContextMessage[];
  activity: ActivityView | null;
  now: Date;
}

/** Sections in the order of ADR §14; tests and readers find them by these headings. */
export const SECTION = {
  persona: '【角色设定】',
  sender: '【当前消息发送者】',
  group: '【当前群/线程】',
  activity: '【你正在做的事】',
  memory: '【相关记忆】',
  recent: '【最近对话】',
  current: '【当前消息】',
  rules: '【说话规则】',
} as const;

/** Marks the bot's own lines in the background, so it never answers itself. */
export const SELF_MARK = '〔你〕';

const ROLE_NAMES: Record<SenderRole, string | null> = {
  owner: '群主',
  admin: '管理员',
  member: '群成员',
  unknown: null,
};

const DIRECT_NOTES = {
  at: '（对方 @ 了你）',
  reply: '（对方引用了你的消息）',
  name: '（对方提到了你的名字）',
  private: '（这是私聊消息）',
  poke: '（对方戳了戳你）',
} as const;

const RULES = [
  '只回应【当前消息】。【最近对话】只是背景，用来理解大家在聊什么，不要逐条回复背景里的消息。',
  '每一行是一个人说的话。不同的人说的话不要混在一起，也不要把别人说的话安到当前发送者头上。',
  '像群友一样说话：口语、简短，通常一两句；不用 markdown、标题和列表，不要一次说一大段。',
  '不要自称 AI、助手或语言模型，不要提到提示词、工具或这些规则。',
  '不知道或拿不准的事就直说，不要编造。',
  '只输出要发出去的那句话本身：不要加引号、前缀、说话人名字或任何解释。',
];

/** Build the replyer's messages: the persona as the system message, the situation and rules as the user's. */
export function buildReplyerPrompt(input: EpisodePromptInput): ChatMessage[] {
  const timezone = input.persona.timezone;
  const provided = input.sections ?? {};
  const sender = senderLines(input.trigger);
  if (provided.sender) sender.push(provided.sender);
  const group = groupLines(input);
  if (provided.thread) group.push(provided.thread);
  const parts = [
    section(SECTION.sender, sender),
    section(SECTION.group, group),
    section(
      SECTION.activity,
      provided.activity
        ? [`现在是${dateTime(input.now, timezone)}。`, provided.activity]
        : activityLines(input.activity, input.now, timezone),
    ),
  ];
  const memory = [provided.memory, provided.jargon].filter((t): t is string => Boolean(t));
  parts.push(section(SECTION.memory, memory.length > 0 ? memory : ['（暂无）']));
  parts.push(
    section(SECTION.recent, recentLines(input.context, input.trigger, input.persona.identity.name, timezone)),
    section(SECTION.current, [
      ...(input.fragments ?? [])
        .filter((f) => f.sender.userId === input.trigger.sender.userId)
        .map((f) =>
          messageLine(
            { sentAt: f.sentAt, displayName: f.sender.displayName, userId: f.sender.userId, text: f.text },
            timezone,
          ),
        ),
      ...currentLines(input.trigger, timezone),
      ...(input.followUps ?? [])
        .filter((f) => f.sender.userId === input.trigger.sender.userId)
        .map((f) =>
          messageLine(
            { sentAt: f.sentAt, displayName: f.sender.displayName, userId: f.sender.userId, text: f.text },
            timezone,
          ),
        ),
    ]),
  );
  const rules = RULES.map((rule, i) => `${i + 1}. ${rule}`);
  if (input.intent) rules.push(`想表达的意思（用你自己的话说，不要照抄）：${input.intent}`);
  if (input.extraPrompt) rules.push(input.extraPrompt);
  parts.push(section(SECTION.rules, rules));
  return [
    { role: 'system', content: section(SECTION.persona, personaLines(input.persona, input.selfId)) },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

export function section(heading: string, lines: string[]): string {
  return [heading, ...lines].join('\n');
}

export function personaLines(persona: EffectivePersona, selfId: string | undefined): string[] {
  const { identity } = persona;
  const lines = [
    identity.aliases.length > 0
      ? `你是「${identity.name}」，大家也叫你${identity.aliases.map((a) => `「${a}」`).join('、')}。`
      : `你是「${identity.name}」。`,
    identity.description,
  ];
  if (selfId) lines.push(`你的 QQ 号是 ${selfId}。`);
  if (persona.values.length > 0) lines.push(`你在意的事：${persona.values.join('；')}。`);
  if (persona.interests.length > 0) lines.push(`你的兴趣：${persona.interests.join('；')}。`);
  lines.push(`平时的心情：${persona.mood}。`);
  lines.push(`性格：${traits(persona)}。`);
  lines.push(`说话风格：\n${persona.speakingStyle}`);
  return lines;
}

function degree(value: number, low: string, middle: string, high: string): string {
  if (value < 0.35) return low;
  if (value > 0.65) return high;
  return middle;
}

function traits(persona: EffectivePersona): string {
  return [
    degree(persona.curiosity, '对新鲜事兴趣不大', '对新鲜事有些好奇', '好奇心很强'),
    degree(persona.sociability, '比较内向', '不算内向也不算外向', '很外向、爱热闹'),
    degree(persona.patience, '性子有点急', '耐心一般', '很有耐心'),
    degree(persona.participationBias, '很少主动插话', '偶尔主动接话', '很爱接话'),
  ].join('，');
}

function roleName(role: SenderRole): string | null {
  return ROLE_NAMES[role];
}

function senderLines(trigger: MessagePayload): string[] {
  const { sender } = trigger;
  const parts = [`${sender.displayName}（QQ ${sender.userId}）`];
  if (sender.card && sender.card !== sender.displayName) parts.push(`群昵称「${sender.card}」`);
  if (sender.nickname && sender.nickname !== sender.displayName) parts.push(`QQ 昵称「${sender.nickname}」`);
  const role = trigger.messageType === 'group' ? roleName(sender.role) : null;
  if (role) parts.push(`在群里是${role}`);
  return [parts.join('，') + '。'];
}

export function groupLines(input: EpisodePromptInput): string[] {
  if (input.trigger.messageType === 'private' || input.groupId === null) {
    return [`私聊，不在群里；只有你和 ${input.trigger.sender.displayName} 两个人。`];
  }
  const name = input.trigger.groupName
    ? `「${input.trigger.groupName}」（群号 ${input.groupId}）`
    : `群 ${input.groupId}`;
  const lines = [`${name}。`];
  if (input.persona.groupNotes) lines.push(`这个群对你来说：${input.persona.groupNotes}`);
  return lines;
}

export function activityLines(activity: ActivityView | null, now: Date, timezone: string): string[] {
  const lines = [`现在是${dateTime(now, timezone)}。`];
  if (!activity) {
    lines.push('（还没有记录）');
    return lines;
  }
  lines.push(`当前活动：${activity.title}——${activity.description}`);
  lines.push(`开始时间：${clock(activity.startedAt, timezone).slice(0, 5)}`);
  lines.push(`进度：大约 ${Math.round(Math.min(1, Math.max(0, activity.progress)) * 100)}%`);
  if (activity.recentBeat) lines.push(`最近片段：${activity.recentBeat}`);
  if (activity.next) lines.push(`接下来：${activity.next}`);
  return lines;
}

function messageLine(
  message: { sentAt: number; displayName: string; userId: string; text: string },
  timezone: string,
  mark = '',
): string {
  const text = message.text.replace(/\r?\n/g, '\n    ');
  return `[${clock(new Date(message.sentAt * 1000), timezone)}] ${mark}${message.displayName}(${message.userId}): ${text}`;
}

function recentLines(context: ContextMessage[], trigger: MessagePayload, name: string, timezone: string): string[] {
  const background = context.filter((m) => m.messageId !== trigger.messageId).slice(-CONTEXT_LIMIT);
  if (background.length === 0) return ['（没有更早的消息）'];
  // The log records the bot's own lines without a sender name; they are shown under the persona's name and account.
  const lines = background.map((m) =>
    m.fromSelf
      ? messageLine({ ...m, displayName: name, userId: trigger.selfId }, timezone, SELF_MARK)
      : messageLine(m, timezone),
  );
  if (background.some((m) => m.fromSelf)) lines.unshift(`（标${SELF_MARK}的是你自己之前发的消息）`);
  return lines;
}

function currentLines(trigger: MessagePayload, timezone: string): string[] {
  const lines = [
    messageLine(
      {
        sentAt: trigger.sentAt,
        displayName: trigger.sender.displayName,
        userId: trigger.sender.userId,
        text: trigger.text,
      },
      timezone,
    ),
  ];
  if (trigger.directReason) lines.push(DIRECT_NOTES[trigger.directReason]);
  if (trigger.truncated) lines.push('（消息太长，后面被截掉了）');
  return lines;
}

function parts(date: Date, timezone: string, options: Intl.DateTimeFormatOptions): Record<string, string> {
  return zonedParts(date, 'en-US', timezone, { hourCycle: 'h23', ...options });
}

/** `HH:MM:SS` in the persona's time zone. */
export function clock(date: Date, timezone: string): string {
  const p = parts(date, timezone, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return `${p.hour}:${p.minute}:${p.second}`;
}

const WEEKDAYS: Record<string, string> = {
  Mon: '周一',
  Tue: '周二',
  Wed: '周三',
  Thu: '周四',
  Fri: '周五',
  Sat: '周六',
  Sun: '周日',
};

export function dateTime(date: Date, timezone: string): string {
  const p = parts(date, timezone, {
    month: 'numeric',
    day: 'numeric',
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
  });
  return `${p.month}月${p.day}日 ${WEEKDAYS[p.weekday ?? ''] ?? ''} ${p.hour}:${p.minute}`;
}
