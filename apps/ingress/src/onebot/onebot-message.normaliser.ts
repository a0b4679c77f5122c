import { EventKind, SENDER_ROLES, type MessagePayload, type MessageSegment, type SenderRole } from '@app/contracts';
import { parseCqString } from '@app/onebot';
import { callsByName, directReasonFor, type DirectnessClues } from './direct.rules.js';
import { isRecord, optionalText, readId, readTime, reject, shown, stringValue } from './onebot-fields.rules.js';
import type { AcceptedEcho, AcceptedMessage, Normalised, NormaliserSettings } from './onebot-input.js';
import { hardRuleFor } from './hard.rules.js';

/** The conversation key of a private chat with `userId` (the event's `groupId`). */
export function privateConversation(userId: string): string {
  return `private:${userId}`;
}

function normaliseSegment(raw: unknown, index: number): MessageSegment {
  const path = `message[${index}]`;
  if (!isRecord(raw)) return reject(path, `must be a segment object {type, data} (got ${shown(raw)})`);
  if (typeof raw.type !== 'string' || raw.type.length === 0 || raw.type.length > 64) {
    return reject(`${path}.type`, `must be a non-empty string of at most 64 characters (got ${shown(raw.type)})`);
  }
  // `shake` and friends carry `data: {}`; some implementations leave it out or send null.
  if (raw.data !== undefined && raw.data !== null && !isRecord(raw.data)) {
    return reject(`${path}.data`, `must be an object (got ${shown(raw.data)})`);
  }
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw.data ?? {})) data[key] = stringValue(value);
  return { type: raw.type, data };
}

function readSegments(message: unknown, maxSegments: number): MessageSegment[] {
  let segments: MessageSegment[];
  if (typeof message === 'string') segments = parseCqString(message);
  else if (Array.isArray(message)) {
    if (message.length > maxSegments) {
      return reject('message', `has ${message.length} segments, more than ${maxSegments}`, 'too_many_segments');
    }
    segments = message.map((raw, i) => normaliseSegment(raw, i));
  }
  // The spec allows a single segment where an array is expected.
  else if (isRecord(message)) segments = [normaliseSegment(message, 0)];
  else return reject('message', `must be an array of segments or a CQ string (got ${shown(message)})`);
  if (segments.length > maxSegments) {
    return reject('message', `has ${segments.length} segments, more than ${maxSegments}`, 'too_many_segments');
  }
  return segments;
}

function bracketed(text: string): string {
  return text.startsWith('[') && text.endsWith(']') ? text : `[${text}]`;
}

function cardTitle(json: string): string {
  // Cards can be large; only read the short ones, where the prompt is the title people see in the chat list.
  if (json.length > 16_384) return '[卡片消息]';
  try {
    const parsed: unknown = JSON.parse(json);
    if (isRecord(parsed) && typeof parsed.prompt === 'string' && parsed.prompt.trim().length > 0) {
      return parsed.prompt.trim();
    }
  } catch {
    // not JSON: the generic tag
  }
  return '[卡片消息]';
}

/** Plain rendering of one segment; `undefined` for a type without a rendering (kept verbatim and counted). */
export function renderSegment(segment: MessageSegment): string | undefined {
  const data = segment.data;
  switch (segment.type) {
    case 'text':
      return data.text ?? '';
    case 'at':
      if (data.qq === 'all') return '@全体成员';
      return `@${data.name || data.qq || ''}`;
    case 'reply':
      return '';
    case 'face':
      return '[表情]';
    case 'mface':
    case 'marketface':
      return data.summary ? bracketed(data.summary) : '[表情]';
    case 'image':
      if (data.summary) return bracketed(data.summary);
      return data.sub_type === '1' ? '[动画表情]' : '[图片]';
    case 'record':
      return '[语音]';
    case 'video':
      return '[视频]';
    case 'file':
      return `[文件:${data.file || data.name || ''}]`;
    case 'forward':
    case 'node':
      return '[转发消息]';
    case 'poke':
    case 'shake':
      return '[戳一戳]';
    case 'dice':
      return data.result ? `[骰子:${data.result}]` : '[骰子]';
    case 'rps':
      return '[猜拳]';
    case 'json':
      return cardTitle(data.data ?? '');
    case 'xml':
      return '[卡片消息]';
    case 'share':
      return data.title ? `[链接:${data.title}]` : '[链接]';
    case 'location':
      return data.title ? `[位置:${data.title}]` : '[位置]';
    case 'music':
      return '[音乐]';
    case 'contact':
      return '[名片]';
    case 'markdown':
      return data.content ?? '';
    default:
      return undefined;
  }
}

function cut(text: string, max: number): { text: string; truncated: boolean } {
  const codePoints = Array.from(text);
  if (codePoints.length <= max) return { text, truncated: false };
  return { text: codePoints.slice(0, max).join(''), truncated: true };
}

function roleOf(value: unknown): SenderRole {
  return (SENDER_ROLES as readonly unknown[]).includes(value) ? (value as SenderRole) : 'unknown';
}

interface Reading {
  rendered: string;
  typed: string;
  unknownSegmentTypes: string[];
  freshAtSelf: boolean;
  quoteAtSelf: boolean;
  replyTo: string | undefined;
}

/** Walk the segments once: rendering, what was typed, mentions and the quote (with its automatic @). */
function read(segments: readonly MessageSegment[], botId: string): Reading {
  const reading: Reading = {
    rendered: '',
    typed: '',
    unknownSegmentTypes: [],
    freshAtSelf: false,
    quoteAtSelf: false,
    replyTo: undefined,
  };
  // After a reply segment, the first @ (only blank text between) is the quote's automatic @ of its author.
  let awaitingQuoteAt = false;
  for (const segment of segments) {
    const text = renderSegment(segment);
    if (text === undefined) reading.unknownSegmentTypes.push(segment.type);
    else reading.rendered += text;
    switch (segment.type) {
      case 'text':
        reading.typed += segment.data.text ?? '';
        if ((segment.data.text ?? '').trim().length > 0) awaitingQuoteAt = false;
        break;
      case 'reply':
        if (reading.replyTo === undefined && segment.data.id) {
          reading.replyTo = segment.data.id;
          awaitingQuoteAt = true;
        }
        break;
      case 'at':
        if (awaitingQuoteAt) {
          awaitingQuoteAt = false;
          if (segment.data.qq === botId) reading.quoteAtSelf = true;
        } else if (segment.data.qq === botId) reading.freshAtSelf = true;
        break;
      default:
        awaitingQuoteAt = false;
    }
  }
  return reading;
}

function typedLength(typed: string): number {
  let n = 0;
  for (const _ of typed) n++;
  return n;
}

/** A `message` (or the bot's own `message_sent`) event. `selfId` is the event's `self_id`. */
export function normaliseMessage(
  event: Record<string, unknown>,
  selfId: string,
  settings: NormaliserSettings,
  ownReport: boolean,
): Normalised {
  const messageType = event.message_type;
  if (messageType !== 'group' && messageType !== 'private') {
    if (typeof messageType === 'string' && messageType.length > 0 && !ownReport) {
      return { ignore: 'unsupported_message_type' };
    }
    return reject('message_type', `must be "group" or "private" (got ${shown(messageType)})`);
  }
  const messageId = readId(event, 'message_id', 'message_id', true);
  const userId = readId(event, 'user_id');
  const sentAt = readTime(event);
  if (event.sender !== undefined && event.sender !== null && !isRecord(event.sender)) {
    return reject('sender', `must be an object (got ${shown(event.sender)})`);
  }
  if (event.anonymous !== undefined && event.anonymous !== null && !isRecord(event.anonymous)) {
    return reject('anonymous', `must be an object or null (got ${shown(event.anonymous)})`);
  }
  const fromSelf = ownReport || userId === selfId;
  let groupId: string;
  if (messageType === 'group')
    groupId = readId(event, event.group_id === undefined && fromSelf ? 'target_id' : 'group_id');
  else if (fromSelf) groupId = privateConversation(event.target_id === undefined ? '0' : readId(event, 'target_id'));
  else groupId = privateConversation(userId);
  const segments = readSegments(event.message, settings.maxSegments);

  const botId = settings.selfId ?? selfId;
  const reading = read(segments, botId);
  if (typedLength(reading.typed) > settings.maxTypedChars) {
    return reject('message', `text is longer than ${settings.maxTypedChars} characters`, 'text_too_long');
  }

  const sender = isRecord(event.sender) ? event.sender : {};
  const anonymous = isRecord(event.anonymous) ? event.anonymous : undefined;
  const nickname = optionalText(sender.nickname);
  const card = optionalText(sender.card);
  // An anonymous member shows up under the alias QQ gives them, not the shared anonymous account.
  const alias = anonymous ? optionalText(anonymous.name) : '';
  const { text, truncated } = cut(reading.rendered.trim(), settings.maxTextChars);

  const payload: MessagePayload = {
    messageType,
    selfId,
    messageId,
    sender: { userId, nickname, card, displayName: alias || card || nickname || userId, role: roleOf(sender.role) },
    segments,
    text,
    truncated,
    mentionsSelf: reading.freshAtSelf,
    sentAt,
  };
  if (typeof event.group_name === 'string' && event.group_name.length > 0) payload.groupName = event.group_name;
  if (reading.replyTo !== undefined) payload.replyToMessageId = reading.replyTo;
  const dedupKey = `${selfId}:${groupId}:${messageId}`;

  if (fromSelf) {
    const echo: AcceptedEcho = {
      kind: EventKind.MessageEchoed,
      groupId,
      actorId: userId,
      dedupKey,
      payload,
    };
    return { accept: echo };
  }

  const rule = hardRuleFor({ userId, typed: reading.typed, ...(messageType === 'group' && { groupId }) }, settings);
  if (rule) return { ignore: rule };

  const clues: DirectnessClues = {
    private: messageType === 'private',
    poke: false,
    freshAtSelf: reading.freshAtSelf,
    quoteAtSelf: reading.quoteAtSelf,
    named: callsByName(reading.typed, settings.nicknames),
    ...(reading.replyTo !== undefined && { replyTo: reading.replyTo }),
  };
  const message: AcceptedMessage = {
    kind: EventKind.MessageObserved,
    groupId,
    actorId: userId,
    userId,
    dedupKey,
    payload,
    clues,
    unknownSegmentTypes: reading.unknownSegmentTypes,
  };
  return { accept: withDirectness(message, false) };
}

/**
 * The message with its directness decided; `quotesBot` says whether the message it quotes is the bot's (the
 * sent-ids store). Called by the normaliser without the store, and again by the intake after the lookup.
 */
export function withDirectness(message: AcceptedMessage, quotesBot: boolean): AcceptedMessage {
  const reason = directReasonFor(message.clues, quotesBot);
  const payload: MessagePayload = { ...message.payload };
  delete payload.directReason;
  if (reason !== undefined) payload.directReason = reason;
  return { ...message, kind: reason ? EventKind.MessageDirect : EventKind.MessageObserved, payload };
}
