import { escapeCqText, toCqString } from './cq-code.js';
import type { OneBotSegment } from './onebot-types.js';

/** NapCat message ids are signed int32; test doubles hand out positive ones from a random start. */
let lastMessageId = 100_000_000 + Math.floor(Math.random() * 1_000_000_000);
export function nextMessageId(): number {
  lastMessageId = lastMessageId >= 2_147_483_647 ? 1 : lastMessageId + 1;
  return lastMessageId;
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
  card?: string;
  role?: 'owner' | 'admin' | 'member';
  groupName?: string;
  messageId?: number;
  /** Epoch seconds; defaults to now. */
  time?: number;
}

/**
 * A group message event exactly as NapCat posts it in array format (see test/fixtures/onebot/message-group/
 * text-napcat.json): numeric ids, `real_seq` as a string, `raw_message` as the CQ string, font 14. An @ is an
 * `at` segment followed by a text segment that starts with a space.
 */
export function napcatGroupMessage(spec: GroupMessageSpec): Record<string, unknown> {
  const messageId = spec.messageId ?? nextMessageId();
  const segments: OneBotSegment[] = spec.atSelf
    ? [
        { type: 'at', data: { qq: spec.selfId } },
        { type: 'text', data: { text: ` ${spec.text}` } },
      ]
    : [{ type: 'text', data: { text: spec.text } }];
  const rawMessage = spec.atSelf ? `[CQ:at,qq=${spec.selfId}] ${escapeCqText(spec.text)}` : escapeCqText(spec.text);
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.userId),
    time: spec.time ?? Math.floor(Date.now() / 1000),
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
    raw_message: rawMessage,
    font: 14,
    sub_type: 'normal',
    message: segments,
    message_format: 'array',
    post_type: 'message',
    group_id: Number(spec.groupId),
    ...(spec.groupName !== undefined && { group_name: spec.groupName }),
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
 * self_id`, `message_seq` 0-ish, and `target_id` naming the group or peer (message-sent/group-at-with-name-napcat.json).
 */
export function napcatMessageSent(spec: MessageSentSpec): Record<string, unknown> {
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.selfId),
    time: spec.time ?? Math.floor(Date.now() / 1000),
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
