import { createHash } from 'node:crypto';
import {
  EventKind,
  noticeDetails,
  type MessagePayload,
  type MessageRecalledPayload,
  type NoticePayload,
  type RequestPayload,
} from '@app/contracts';
import { hardRuleFor } from './hard.rules.js';
import {
  isRecord,
  optionalId,
  optionalText,
  optionalWord,
  readId,
  readTime,
  reject,
  shown,
  stringValue,
} from './onebot-fields.rules.js';
import type {
  AcceptedMessage,
  AcceptedNotice,
  AcceptedRecall,
  AcceptedRequest,
  Normalised,
  NormaliserSettings,
} from './onebot-input.js';
import { privateConversation } from './onebot-message.normaliser.js';

/** Fields every notice shape names; the rest go into `details`. */
const KNOWN_FIELDS = new Set([
  'time',
  'self_id',
  'post_type',
  'notice_type',
  'sub_type',
  'group_id',
  'user_id',
  'operator_id',
  'target_id',
  'message_id',
  'duration',
  'raw_info',
  'sender_id',
]);

/** A stable digest of a notice, so the same notice over two transports is one event. */
function digest(event: Record<string, unknown>): string {
  const sorted = Object.keys(event)
    .sort()
    .map((key) => [key, event[key]]);
  return createHash('sha1').update(JSON.stringify(sorted)).digest('hex').slice(0, 20);
}

function details(event: Record<string, unknown>): Record<string, string> {
  const entries: [string, string][] = [];
  for (const [key, value] of Object.entries(event)) {
    if (KNOWN_FIELDS.has(key)) continue;
    if (isRecord(value)) {
      for (const [inner, innerValue] of Object.entries(value)) {
        if (!isRecord(innerValue) && !Array.isArray(innerValue))
          entries.push([`${key}.${inner}`, stringValue(innerValue)]);
      }
    } else entries.push([key, stringValue(value)]);
  }
  return noticeDetails(entries);
}

function isPoke(event: Record<string, unknown>): boolean {
  return (event.notice_type === 'notify' && event.sub_type === 'poke') || event.notice_type === 'poke';
}

/** A `notice` event: a recall, a poke at the bot (a direct message), or any other notice (recorded). */
export function normaliseNotice(
  event: Record<string, unknown>,
  selfId: string,
  settings: NormaliserSettings,
): Normalised {
  const noticeType = optionalWord(event, 'notice_type');
  if (noticeType === undefined) return reject('notice_type', `is required (got ${shown(event.notice_type)})`);
  const subType = optionalWord(event, 'sub_type');
  const time = readTime(event);
  const groupId = event.group_id === undefined || event.group_id === null ? undefined : readId(event, 'group_id');
  const userId = optionalId(event, 'user_id');
  const botId = settings.selfId ?? selfId;
  if (groupId !== undefined && settings.groups !== '*' && !settings.groups.has(groupId)) {
    return { ignore: 'group_not_listed' };
  }

  if (noticeType === 'group_recall' || noticeType === 'friend_recall') {
    const messageId = readId(event, 'message_id', 'message_id', true);
    if (userId === undefined) return reject('user_id', `is required (got ${shown(event.user_id)})`);
    const conversation = groupId ?? privateConversation(userId);
    const payload: MessageRecalledPayload = {
      messageType: groupId === undefined ? 'private' : 'group',
      selfId,
      messageId,
      userId,
      operatorId: optionalId(event, 'operator_id') ?? userId,
      recalledAt: time,
    };
    const recall: AcceptedRecall = {
      kind: EventKind.MessageRecalled,
      groupId: conversation,
      actorId: payload.operatorId,
      dedupKey: `recall:${selfId}:${conversation}:${messageId}`,
      originalDedupKey: `${selfId}:${conversation}:${messageId}`,
      payload,
    };
    return { accept: recall };
  }

  if (isPoke(event)) {
    // go-cqhttp names the poker `sender_id` in private chats; NapCat `user_id`.
    const poker = userId ?? optionalId(event, 'sender_id');
    if (poker === undefined) return reject('user_id', `is required (got ${shown(event.user_id)})`);
    if (poker === botId) return { ignore: 'self' };
    const target = event.target_id === undefined ? undefined : readId(event, 'target_id');
    // NapCat reports a poke at the bot with `target_id: 0` at times (QUIRKS.md); a private poke is always at the bot.
    const atBot = groupId === undefined || target === botId || target === '0';
    if (atBot) {
      const rule = hardRuleFor({ userId: poker, ...(groupId !== undefined && { groupId }) }, settings);
      if (rule) return { ignore: rule };
      return { accept: pokeMessage(selfId, botId, poker, groupId, time) };
    }
  }

  const conversation = groupId ?? privateConversation(userId ?? '0');
  const operatorId = optionalId(event, 'operator_id');
  const targetId = optionalId(event, 'target_id');
  const messageId =
    event.message_id === undefined || event.message_id === null
      ? undefined
      : readId(event, 'message_id', 'message_id', true);
  const duration = event.duration;
  if (duration !== undefined && (typeof duration !== 'number' || !Number.isSafeInteger(duration) || duration < 0)) {
    return reject('duration', `must be a non-negative integer of seconds (got ${shown(duration)})`);
  }
  const payload: NoticePayload = {
    noticeType,
    scope: groupId === undefined ? 'private' : 'group',
    selfId,
    aboutSelf: userId === botId || targetId === botId,
    details: details(event),
    reportedAt: time,
  };
  if (subType !== undefined) payload.subType = subType;
  if (userId !== undefined) payload.userId = userId;
  if (operatorId !== undefined) payload.operatorId = operatorId;
  if (targetId !== undefined) payload.targetId = targetId;
  if (messageId !== undefined) payload.messageId = messageId;
  if (typeof duration === 'number') payload.durationSeconds = duration;
  const notice: AcceptedNotice = {
    kind: EventKind.NoticeReceived,
    groupId: conversation,
    actorId: operatorId ?? userId ?? selfId,
    dedupKey: `notice:${selfId}:${conversation}:${digest(event)}`,
    payload,
  };
  return { accept: notice };
}

function pokeMessage(
  selfId: string,
  botId: string,
  poker: string,
  groupId: string | undefined,
  time: number,
): AcceptedMessage {
  const conversation = groupId ?? privateConversation(poker);
  const messageId = `poke:${time}:${poker}`;
  const payload: MessagePayload = {
    messageType: groupId === undefined ? 'private' : 'group',
    selfId,
    messageId,
    sender: { userId: poker, nickname: '', card: '', displayName: poker, role: 'unknown' },
    segments: [{ type: 'poke', data: { qq: botId } }],
    text: '[戳一戳]',
    truncated: false,
    mentionsSelf: false,
    directReason: 'poke',
    sentAt: time,
  };
  return {
    kind: EventKind.MessageDirect,
    groupId: conversation,
    actorId: poker,
    userId: poker,
    dedupKey: `${selfId}:${conversation}:${messageId}`,
    payload,
    clues: { private: groupId === undefined, poke: true, freshAtSelf: false, quoteAtSelf: false, named: false },
    unknownSegmentTypes: [],
  };
}

/** A `request` event (friend / group join / invite): recorded. */
export function normaliseRequest(
  event: Record<string, unknown>,
  selfId: string,
  settings: NormaliserSettings,
): Normalised {
  const requestType = event.request_type;
  if (requestType !== 'friend' && requestType !== 'group') {
    return reject('request_type', `must be "friend" or "group" (got ${shown(requestType)})`);
  }
  const time = readTime(event);
  const groupId = requestType === 'group' ? readId(event, 'group_id') : undefined;
  if (groupId !== undefined && settings.groups !== '*' && !settings.groups.has(groupId)) {
    return { ignore: 'group_not_listed' };
  }
  // NapCat once reported a join request with `user_id: 0` (request/group-add-user0-napcat.json): kept as "0".
  const userId = readId(event, 'user_id');
  const flag = event.flag;
  if (typeof flag !== 'string' || flag.length === 0 || flag.length > 500) {
    return reject('flag', `must be a non-empty string (got ${shown(flag)})`);
  }
  const payload: RequestPayload = {
    requestType,
    selfId,
    userId,
    comment: optionalText(event.comment).slice(0, 2000),
    flag,
    reportedAt: time,
  };
  const subType = optionalWord(event, 'sub_type', 32);
  if (subType !== undefined) payload.subType = subType;
  const request: AcceptedRequest = {
    kind: EventKind.RequestReceived,
    groupId: groupId ?? privateConversation(userId),
    actorId: userId,
    dedupKey: `request:${selfId}:${flag}`,
    payload,
  };
  return { accept: request };
}
