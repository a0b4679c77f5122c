import { escapeCqText, toCqString, type OneBotSegment } from '@app/onebot';

/*
 * OneBot v11 events exactly as NapCat reports them (see test/fixtures/onebot/ and QUIRKS.md): numeric ids,
 * `real_seq` a string, `raw_message` the CQ string, font 14, ids inside segments as strings.
 */

/** NapCat message ids are signed int32; test doubles hand out positive ones from a random start. */
let lastMessageId = 100_000_000 + Math.floor(Math.random() * 1_000_000_000);
export function nextMessageId(): number {
  lastMessageId = lastMessageId >= 2_147_483_647 ? 1 : lastMessageId + 1;
  return lastMessageId;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export interface GroupMessageSpec {
  /** The bot account that receives the message (`self_id`). */
  selfId: string;
  groupId: string;
  userId: string;
  nickname: string;
  text: string;
  /** Start the message with an `at` segment of the bot, as the QQ client does when someone @-mentions it. */
  atSelf?: boolean;
  /**
   * Quote this message: a `reply` segment first, then (as the QQ client adds it) an `at` of the quoted author
   * when `quotedUserId` is given.
   */
  replyTo?: string;
  quotedUserId?: string;
  /** Segments to send instead of the text ones (forward, image …); `text` is then only used for `raw_message`. */
  segments?: OneBotSegment[];
  card?: string;
  role?: 'owner' | 'admin' | 'member';
  groupName?: string;
  messageId?: number;
  /** Epoch seconds; defaults to now. */
  time?: number;
}

/**
 * A group message event as NapCat posts it in array format (message-group/text-napcat.json). An @ is an `at`
 * segment followed by a text segment that starts with a space; a quote is `reply` (+ the automatic `at`).
 */
export function napcatGroupMessage(spec: GroupMessageSpec): Record<string, unknown> {
  const messageId = spec.messageId ?? nextMessageId();
  const segments: OneBotSegment[] = [];
  if (spec.replyTo !== undefined) {
    segments.push({ type: 'reply', data: { id: spec.replyTo } });
    if (spec.quotedUserId !== undefined) segments.push({ type: 'at', data: { qq: spec.quotedUserId } });
  }
  if (spec.atSelf) segments.push({ type: 'at', data: { qq: spec.selfId } });
  if (spec.segments) segments.push(...spec.segments);
  else {
    const spaced = segments.length > 0 && segments[segments.length - 1]!.type === 'at';
    segments.push({ type: 'text', data: { text: spaced ? ` ${spec.text}` : spec.text } });
  }
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.userId),
    time: spec.time ?? nowSeconds(),
    message_id: messageId,
    message_seq: messageId,
    real_id: messageId,
    real_seq: String(messageId % 100_000),
    message_type: 'group',
    sender: {
      user_id: Number(spec.userId),
      nickname: spec.nickname,
      card: spec.card ?? '',
      role: spec.role ?? 'member',
    },
    raw_message: spec.segments ? toCqString(segments) : rawOf(segments, spec.text),
    font: 14,
    sub_type: 'normal',
    message: segments,
    message_format: 'array',
    post_type: 'message',
    group_id: Number(spec.groupId),
    ...(spec.groupName !== undefined && { group_name: spec.groupName }),
  };
}

function rawOf(segments: OneBotSegment[], text: string): string {
  const codes = toCqString(segments.filter((s) => s.type !== 'text'));
  const last = segments[segments.length - 1];
  const spaced = last?.type === 'text' && typeof last.data.text === 'string' && last.data.text.startsWith(' ');
  return `${codes}${spaced ? ' ' : ''}${escapeCqText(text)}`;
}

export interface PrivateMessageSpec {
  selfId: string;
  userId: string;
  nickname: string;
  text: string;
  replyTo?: string;
  messageId?: number;
  time?: number;
}

/** A private (friend) message as NapCat posts it (message-private/text-array-napcat.json). */
export function napcatPrivateMessage(spec: PrivateMessageSpec): Record<string, unknown> {
  const messageId = spec.messageId ?? nextMessageId();
  const segments: OneBotSegment[] = [];
  if (spec.replyTo !== undefined) segments.push({ type: 'reply', data: { id: spec.replyTo } });
  segments.push({ type: 'text', data: { text: spec.text } });
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.userId),
    time: spec.time ?? nowSeconds(),
    message_id: messageId,
    message_seq: messageId,
    real_id: messageId,
    real_seq: String(messageId % 100_000),
    message_type: 'private',
    sender: { user_id: Number(spec.userId), nickname: spec.nickname, card: '' },
    raw_message: toCqString(segments),
    font: 14,
    sub_type: 'friend',
    message: segments,
    message_format: 'array',
    post_type: 'message',
    target_id: Number(spec.userId),
  };
}

export interface MessageSentSpec {
  selfId: string;
  nickname: string;
  messageType: 'group' | 'private';
  /** Group id for group messages, the peer's user id for private ones. */
  targetId: string;
  messageId: number;
  segments: OneBotSegment[];
  time?: number;
}

/**
 * The report of the bot's own message (NapCat `reportSelfMessage`): `post_type: message_sent`, `user_id ==
 * self_id`, and `target_id` naming the group or peer (message-sent/group-at-with-name-napcat.json).
 */
export function napcatMessageSent(spec: MessageSentSpec): Record<string, unknown> {
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.selfId),
    time: spec.time ?? nowSeconds(),
    message_id: spec.messageId,
    message_seq: spec.messageId,
    message_type: spec.messageType,
    sender: { user_id: Number(spec.selfId), nickname: spec.nickname, card: '', role: 'member', title: '' },
    raw_message: toCqString(spec.segments),
    font: 14,
    sub_type: spec.messageType === 'group' ? 'normal' : 'friend',
    message: spec.segments,
    message_format: 'array',
    post_type: 'message_sent',
    ...(spec.messageType === 'group' && { group_id: Number(spec.targetId) }),
    target_id: Number(spec.targetId),
  };
}

export interface PokeSpec {
  selfId: string;
  /** Who poked. */
  userId: string;
  /** Who was poked; NapCat sometimes reports 0 with the names only in `raw_info` (poke-group-target0-napcat.json). */
  targetId: string;
  /** Absent for a poke in a private chat. */
  groupId?: string;
  time?: number;
}

/** A poke (戳一戳) notice as NapCat reports it. */
export function napcatPoke(spec: PokeSpec): Record<string, unknown> {
  return {
    time: spec.time ?? nowSeconds(),
    self_id: Number(spec.selfId),
    post_type: 'notice',
    notice_type: 'notify',
    sub_type: 'poke',
    target_id: Number(spec.targetId),
    user_id: Number(spec.userId),
    ...(spec.groupId !== undefined ? { group_id: Number(spec.groupId) } : { sender_id: Number(spec.userId) }),
    raw_info: [
      { col: '1', nm: '', type: 'qq', uid: `u_${spec.userId}` },
      { jp: 'httpv=2&actionId=10', src: 'poke.jpg', type: 'img' },
      { txt: '戳了戳', type: 'nor' },
      { col: '1', nm: '', tp: '0', type: 'qq', uid: `u_${spec.targetId}` },
    ],
  };
}

export interface RecallSpec {
  selfId: string;
  messageId: number | string;
  /** Author of the withdrawn message. */
  userId: string;
  operatorId?: string;
  /** Absent for a private (friend) recall. */
  groupId?: string;
  time?: number;
}

/** `group_recall` / `friend_recall` as NapCat reports them (notice/group-recall-napcat.json). */
export function napcatRecall(spec: RecallSpec): Record<string, unknown> {
  const base = {
    time: spec.time ?? nowSeconds(),
    self_id: Number(spec.selfId),
    post_type: 'notice',
    user_id: Number(spec.userId),
    message_id: Number(spec.messageId),
  };
  return spec.groupId !== undefined
    ? {
        ...base,
        group_id: Number(spec.groupId),
        notice_type: 'group_recall',
        operator_id: Number(spec.operatorId ?? spec.userId),
      }
    : { ...base, notice_type: 'friend_recall' };
}

export function napcatHeartbeat(selfId: string, intervalMs = 30_000): Record<string, unknown> {
  return {
    time: nowSeconds(),
    self_id: Number(selfId),
    post_type: 'meta_event',
    meta_event_type: 'heartbeat',
    status: { online: true, good: true },
    interval: intervalMs,
  };
}

export function napcatLifecycle(
  selfId: string,
  subType: 'connect' | 'enable' | 'disable' = 'connect',
): Record<string, unknown> {
  return {
    time: nowSeconds(),
    self_id: Number(selfId),
    post_type: 'meta_event',
    meta_event_type: 'lifecycle',
    sub_type: subType,
  };
}
