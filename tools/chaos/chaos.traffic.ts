import { groupMessage, seg } from '../harness/onebot-events.js';

/** One planned chat message: its token (`#m<index>`) is in its text, and in every reply part that answers it. */
export interface TrafficItem {
  index: number;
  token: string;
  groupId: string;
  userId: string;
  mention: boolean;
  messageId: number;
}

export interface TrafficPlan {
  messages: number;
  groups: number;
  /** Share of messages that @ the bot (0–1). */
  mentionShare: number;
  seed: number;
  firstGroupId?: number;
  firstMessageId?: number;
}

const CHATTER = ['今天好热', '有人打游戏吗', '晚上吃啥', '刚下班', '这个好好笑', '周末去哪玩', '哈哈哈', '我也是'];
const QUESTIONS = ['在吗', '帮我看看这个', '你觉得呢', '推荐一首歌', '明天会下雨吗', '讲个笑话'];

/** mulberry32: the plan is a function of its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The chaos traffic: `messages` messages spread over `groups` groups, a share of them @-mentions of the bot. */
export function planTraffic(plan: TrafficPlan): TrafficItem[] {
  const draw = random(plan.seed);
  const firstGroup = plan.firstGroupId ?? 700_000;
  const firstMessage = plan.firstMessageId ?? 1_500_000_000;
  const items: TrafficItem[] = [];
  for (let index = 0; index < plan.messages; index++) {
    const group = Math.floor(draw() * plan.groups);
    items.push({
      index,
      token: `#m${index}`,
      groupId: String(firstGroup + group),
      userId: String(30_000 + group * 16 + Math.floor(draw() * 16)),
      mention: draw() < plan.mentionShare,
      messageId: firstMessage + index,
    });
  }
  return items;
}

/** The OneBot event of one planned message, as NapCat posts it. */
export function trafficEvent(item: TrafficItem, selfId: string, time: number): Record<string, unknown> {
  const chatter = CHATTER[item.index % CHATTER.length]!;
  const question = QUESTIONS[item.index % QUESTIONS.length]!;
  return groupMessage({
    selfId,
    groupId: item.groupId,
    messageId: item.messageId,
    time,
    sender: { userId: item.userId, nickname: `群友${item.userId.slice(-3)}` },
    segments: item.mention
      ? [seg.at(selfId), seg.text(` ${question} ${item.token}`)]
      : [seg.text(`${chatter} ${item.token}`)],
  });
}

const TOKEN = /#m\d+/g;
const PART = /回(#m\d+)·(\d+)/g;

/**
 * What the LLM double answers for a prompt whose current message is `current`: two short lines per token in it,
 * each naming its token and part, so every delivered part says which message and which part it is. With a
 * 20-character message limit outbound sends each line as its own part.
 */
export function chaosReply(current: string): string {
  const tokens = [...new Set(current.match(TOKEN) ?? [])];
  if (tokens.length === 0) return '嗯嗯';
  return tokens.flatMap((token) => [`回${token}·1 收到啦。`, `回${token}·2 我想想哈。`]).join('\n');
}

/** The (token, part) pairs a text carries, in order. */
export function replyParts(text: string): { token: string; part: number }[] {
  return [...text.matchAll(PART)].map((m) => ({ token: m[1]!, part: Number(m[2]) }));
}
