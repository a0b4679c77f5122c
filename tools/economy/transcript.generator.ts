import {
  botMessageSent,
  groupMessage,
  groupRecall,
  privateMessage,
  seg,
  type Segment,
  type Sender,
} from '../harness/onebot-events.js';

/**
 * Realistic multi-group chat transcripts for the economy replay: what a bot account in several QQ groups would
 * receive from NapCat over an afternoon. Seeded, so a transcript is reproducible from its settings.
 *
 * Each group has a tempo (messages per minute between bursts, a burst factor) and a membership; a group's day is a
 * sequence of conversation bursts separated by lulls. Inside a burst people chat, ask questions (some in the
 * persona's interests), send fragments (one person, several short lines in seconds), images, faces, forwards,
 * replies to each other (a quote plus the automatic @ of its author, as the QQ client adds), commands for other
 * bots, @ the bot or call it by name, reply to the bot's messages, recall what they said; now and then someone
 * floods (the same line many times) or the group repeats a line (复读). A few people write to the bot privately.
 */

export type Tempo = 'quiet' | 'normal' | 'busy';

export interface GroupProfile {
  groupId: string;
  tempo: Tempo;
  members: number;
}

export interface TranscriptSpec {
  seed: number;
  selfId: string;
  /** Names people call the bot by (the persona's name and aliases). */
  botNames: string[];
  botNickname: string;
  /** Epoch seconds of the first event. */
  start: number;
  minutes: number;
  groups: GroupProfile[];
  /** People who write to the bot privately during the transcript. */
  privateChats: number;
  /** Share of group messages that address the bot (@, name, reply to it); default 0.04. */
  directShare?: number;
}

/** Messages per minute inside a burst, share of time in bursts, by tempo. */
const TEMPO: Record<Tempo, { perMinute: number; burstShare: number }> = {
  quiet: { perMinute: 2, burstShare: 0.15 },
  normal: { perMinute: 6, burstShare: 0.3 },
  busy: { perMinute: 18, burstShare: 0.5 },
};

const CHATTER = [
  '今天食堂的糖醋排骨绝了',
  '有人下午一起去图书馆吗',
  '刚下课，累死',
  '这周作业也太多了吧',
  '外面下雨了，没带伞',
  '晚上有人开黑吗',
  '我宣布今天早睡',
  '这个表情包哪来的哈哈',
  '明天几点集合来着',
  '好家伙',
  '笑死我了',
  '我也想要',
  '确实',
  '真的假的',
  '冲冲冲',
  '下周考试了还没复习',
  '快递终于到了',
  '奶茶第二杯半价有人拼吗',
  '有没有人知道打印店几点关门',
  '刚看完那集，哭了',
];
const LOW_INFO = ['哈哈哈', '草', '+1', '6', '哈哈哈哈哈', '？', '笑死', '好耶', '嗯嗯', '啊这'];
const QUESTIONS = [
  '有人知道学校附近哪家猫咖好吗？',
  '宿舍小锅能煮火锅吗？会不会跳闸？',
  '最近有什么好听的民谣推荐吗？',
  '这季新番大家在追哪部？',
  '考试周怎么熬夜不困啊？',
  '播客用什么软件录比较好？',
  '楼下那只橘猫是不是又胖了？',
  '周末去哪拍照比较出片？',
  '这道题有人会吗？',
  '明天体测要带什么？',
  '谁有高数的笔记啊？',
  '食堂三楼几点开门？',
];
const TO_BOT = [
  '你觉得呢？',
  '在吗？问你个事',
  '今天心情怎么样',
  '推荐一首歌呗',
  '晚饭吃什么好',
  '帮我想个节目名字',
  '芋圆今天吃了吗',
  '你最近在听什么',
];
const FRAGMENTS = [
  ['我跟你们说', '今天', '在食堂', '看到一只猫', '跑进来了'],
  ['等下', '我找找', '找到了'],
  ['啊啊啊', '考完了', '终于'],
  ['那个', '就是', '明天的活动', '还去吗'],
];
const COMMANDS = ['/签到', '/help', '#今日运势', '.roll 100', '/天气 杭州', '#抽卡'];
const FLOOD = ['哈哈哈哈哈哈', '冲', '？？？', '来了来了', '好好好'];
const REPEAT = ['今天也要加油', '芋圆可爱', '下雨了下雨了', '周五快乐'];
const NAMES = ['阿杰', '小雨', '老王', '可乐', '星星', '阿May', '团子', '大白', '小鹿', '橙子', '木木', '阿哲'];

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

interface Timed {
  time: number;
  order: number;
  event: Record<string, unknown>;
}

class Builder {
  readonly out: Timed[] = [];
  private order = 0;
  private messageId: number;
  readonly draw: () => number;

  constructor(readonly spec: TranscriptSpec) {
    this.draw = random(spec.seed);
    this.messageId = 1_200_000_000 + Math.floor(this.draw() * 100_000_000);
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.draw() * list.length)]!;
  }

  chance(p: number): boolean {
    return this.draw() < p;
  }

  /** Exponential gap with the given mean (seconds). */
  gap(mean: number): number {
    return -Math.log(1 - this.draw()) * mean;
  }

  nextId(): number {
    return ++this.messageId;
  }

  /** Schedule `event` at `time`; its OneBot `time` field (whole seconds) is set to match. */
  push(time: number, event: Record<string, unknown>): void {
    event.time = Math.floor(time);
    this.out.push({ time, order: this.order++, event });
  }
}

interface GroupState {
  profile: GroupProfile;
  members: Sender[];
  /** Recent user messages (for replies and recalls). */
  recent: { messageId: number; sender: Sender; time: number }[];
  /** The bot's recent messages in this group (for replies to the bot). */
  botMessages: { messageId: number; time: number }[];
}

function membersOf(b: Builder, profile: GroupProfile, index: number): Sender[] {
  return Array.from({ length: profile.members }, (_, i) => ({
    userId: String(40_000 + index * 1000 + i),
    nickname: `${b.pick(NAMES)}${i}`,
    card: b.chance(0.4) ? `${b.pick(NAMES)}-${i}` : '',
    role: i === 0 ? ('owner' as const) : i < 3 ? ('admin' as const) : ('member' as const),
  }));
}

function message(b: Builder, g: GroupState, time: number, sender: Sender, segments: Segment[]): number {
  const messageId = b.nextId();
  b.push(
    time,
    groupMessage({
      selfId: b.spec.selfId,
      groupId: g.profile.groupId,
      messageId,
      time: Math.floor(time),
      sender,
      segments,
    }),
  );
  g.recent.push({ messageId, sender, time });
  if (g.recent.length > 30) g.recent.shift();
  return messageId;
}

/** One thing happening in a group at `time`; returns the seconds it took (fragments and floods span time). */
function happen(b: Builder, g: GroupState, time: number): number {
  const sender = b.pick(g.members);
  const direct = b.spec.directShare ?? 0.04;
  const roll = b.draw();
  let t = time;
  if (roll < direct * 0.5) {
    message(b, g, t, sender, [seg.at(b.spec.selfId), seg.text(` ${b.pick(TO_BOT)}`)]);
    // In the original session the bot answered some of them; later someone may reply to that answer.
    if (b.chance(0.6)) botSays(b, g, t + 3 + b.gap(6));
  } else if (roll < direct * 0.75) {
    message(b, g, t, sender, [seg.text(`${b.pick(b.spec.botNames)}，${b.pick(TO_BOT)}`)]);
  } else if (roll < direct) {
    const bot = g.botMessages[g.botMessages.length - 1];
    if (bot && time - bot.time < 600) {
      message(b, g, t, sender, [
        seg.reply(bot.messageId),
        seg.at(b.spec.selfId),
        seg.text(` ${b.pick(['哈哈是的', '真的吗？', '那你呢', '对对对'])}`),
      ]);
    } else {
      message(b, g, t, sender, [seg.text(b.pick(CHATTER))]);
    }
  } else if (roll < 0.3) {
    message(b, g, t, sender, [seg.text(b.pick(CHATTER))]);
  } else if (roll < 0.45) {
    message(b, g, t, sender, [seg.text(b.pick(LOW_INFO))]);
  } else if (roll < 0.55) {
    message(b, g, t, sender, [seg.text(b.pick(QUESTIONS))]);
    // The bot of the original session sometimes joined in on an open question.
    if (b.chance(0.15)) botSays(b, g, t + 5 + b.gap(10));
  } else if (roll < 0.63) {
    for (const line of b.pick(FRAGMENTS)) {
      message(b, g, t, sender, [seg.text(line)]);
      t += 0.8 + b.gap(1.5);
    }
  } else if (roll < 0.7) {
    const quoted = g.recent.length > 0 ? b.pick(g.recent) : undefined;
    if (quoted && quoted.sender.userId !== sender.userId) {
      message(b, g, t, sender, [
        seg.reply(quoted.messageId),
        seg.at(quoted.sender.userId),
        seg.text(` ${b.pick(['确实', '哈哈哈', '我也觉得', '真的吗', '不是吧'])}`),
      ]);
    } else {
      message(b, g, t, sender, [seg.text(b.pick(CHATTER))]);
    }
  } else if (roll < 0.78) {
    const image = seg.image(
      `${Math.floor(b.draw() * 1e16)
        .toString(16)
        .toUpperCase()}.jpg`,
      b.chance(0.5) ? '[动画表情]' : '',
    );
    message(b, g, t, sender, b.chance(0.4) ? [seg.text(b.pick(['看这个', '笑死', '我家的']) + ' '), image] : [image]);
  } else if (roll < 0.83) {
    message(b, g, t, sender, [
      seg.face(Math.floor(b.draw() * 300)),
      ...(b.chance(0.5) ? [seg.text(b.pick(LOW_INFO))] : []),
    ]);
  } else if (roll < 0.86) {
    message(b, g, t, sender, [seg.forward(String(7_000_000_000_000_000_000n + BigInt(Math.floor(b.draw() * 1e12))))]);
  } else if (roll < 0.89) {
    message(b, g, t, sender, [seg.text(b.pick(COMMANDS))]);
  } else if (roll < 0.91) {
    const own = [...g.recent].reverse().find((m) => m.sender.userId === sender.userId && time - m.time < 120);
    if (own) {
      b.push(
        t + 2 + b.gap(20),
        groupRecall({
          selfId: b.spec.selfId,
          groupId: g.profile.groupId,
          userId: sender.userId,
          messageId: own.messageId,
          time: Math.floor(t),
        }),
      );
    } else {
      const id = message(b, g, t, sender, [seg.text(b.pick(CHATTER))]);
      if (b.chance(0.5))
        b.push(
          t + 5 + b.gap(15),
          groupRecall({
            selfId: b.spec.selfId,
            groupId: g.profile.groupId,
            userId: sender.userId,
            messageId: id,
            time: Math.floor(t + 5),
          }),
        );
    }
  } else if (roll < 0.93) {
    const line = b.pick(FLOOD);
    const count = 8 + Math.floor(b.draw() * 20);
    for (let i = 0; i < count; i++) {
      message(b, g, t, sender, [seg.text(line)]);
      t += 0.3 + b.gap(0.8);
    }
  } else if (roll < 0.95) {
    const line = b.pick(REPEAT);
    const count = 3 + Math.floor(b.draw() * 6);
    for (let i = 0; i < count; i++) {
      message(b, g, t, b.pick(g.members), [seg.text(line)]);
      t += 1 + b.gap(3);
    }
  } else {
    message(b, g, t, sender, [seg.text(`${b.pick(CHATTER)}，${b.pick(QUESTIONS)}`)]);
  }
  return t - time;
}

function botSays(b: Builder, g: GroupState, time: number): void {
  const messageId = b.nextId();
  b.push(
    time,
    botMessageSent({
      selfId: b.spec.selfId,
      nickname: b.spec.botNickname,
      groupId: g.profile.groupId,
      messageId,
      time: Math.floor(time),
      segments: [seg.text(b.pick(['哈哈我在', '这个我知道！', '让我想想', '芋圆今天超乖', '好呀好呀']))],
    }),
  );
  g.botMessages.push({ messageId, time });
}

/** The transcript's events in time order (ties keep generation order). */
export function generateTranscript(spec: TranscriptSpec): Record<string, unknown>[] {
  const b = new Builder(spec);
  const end = spec.start + spec.minutes * 60;
  spec.groups.forEach((profile, index) => {
    const g: GroupState = { profile, members: membersOf(b, profile, index), recent: [], botMessages: [] };
    const tempo = TEMPO[profile.tempo];
    let t = spec.start + b.gap(60);
    let inBurst = b.chance(tempo.burstShare);
    let phaseEnd = t + b.gap(inBurst ? 300 : 300 * (1 / tempo.burstShare - 1));
    while (t < end) {
      if (t > phaseEnd) {
        inBurst = !inBurst;
        phaseEnd = t + b.gap(inBurst ? 300 : 300 * (1 / tempo.burstShare - 1));
      }
      const rate = inBurst ? tempo.perMinute : tempo.perMinute / 12;
      t += happen(b, g, t) + b.gap(60 / rate);
    }
  });
  for (let i = 0; i < spec.privateChats; i++) {
    const sender: Sender = { userId: String(90_000 + i), nickname: `${b.pick(NAMES)}${i}` };
    let t = spec.start + b.gap(spec.minutes * 20);
    while (t < end) {
      const lines = 1 + Math.floor(b.draw() * 3);
      for (let k = 0; k < lines; k++) {
        b.push(
          t,
          privateMessage({
            selfId: spec.selfId,
            messageId: b.nextId(),
            time: Math.floor(t),
            sender,
            segments: [seg.text(k === 0 ? b.pick(TO_BOT) : b.pick(CHATTER))],
          }),
        );
        t += 2 + b.gap(4);
      }
      t += b.gap(spec.minutes * 15);
    }
  }
  return b.out
    .filter((e) => e.time < end)
    .sort((x, y) => x.time - y.time || x.order - y.order)
    .map((e) => e.event);
}

/** A mix of tempos for `count` groups: one busy, then normal and quiet alternating. */
export function defaultGroups(count: number, firstGroupId = 810_001): GroupProfile[] {
  return Array.from({ length: count }, (_, i) => {
    const tempo: Tempo = i === 0 ? 'busy' : i % 2 === 1 ? 'normal' : 'quiet';
    return { groupId: String(firstGroupId + i), tempo, members: tempo === 'busy' ? 40 : tempo === 'normal' ? 20 : 8 };
  });
}
