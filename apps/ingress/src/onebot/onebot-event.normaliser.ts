import {
  EventKind,
  makeEvent,
  PRIORITY,
  SENDER_ROLES,
  type DirectReason,
  type EventOf,
  type MessagePayload,
  type MessageSegment,
  type SenderRole,
} from '@app/contracts';
import { parseCqString } from '@app/onebot';

/**
 * One OneBot v11 event in, one decision out: accept it as a message event, ignore it with a reason, or reject it
 * naming the bad field. Pure: no clock, no I/O, no metrics; the intake records what this decides.
 *
 * Implementations differ (QUIRKS.md): ids arrive as numbers or digit strings, `message` as an array or a CQ string,
 * segment data values as strings, numbers, nulls or objects. Everything is normalised to strings here.
 */

export interface NormaliserSettings {
  /** `QUNLI_SELF_ID`: when set, events of any other bot account are ignored and @ detection uses it. */
  selfId?: string;
  /** `QUNLI_NICKNAMES`: names that make a group message direct when its text contains one. */
  nicknames: readonly string[];
  /** `QUNLI_GROUPS`. */
  groups: '*' | ReadonlySet<string>;
  /** `QUNLI_MAX_TEXT_CHARS`. */
  maxTextChars: number;
}

export type MessageKind = typeof EventKind.MessageDirect | typeof EventKind.MessageObserved;

export interface AcceptedMessage {
  kind: MessageKind;
  /** The group id, or `private:<userId>` for a private chat. */
  groupId: string;
  userId: string;
  /** `selfId:conversation:messageId`: the same upstream message always maps to the same key. */
  dedupKey: string;
  payload: MessagePayload;
  /** Segment types this normaliser has no rendering for (kept as-is in the payload). */
  unknownSegmentTypes: string[];
}

export const IGNORE_REASONS = [
  'self_message',
  'other_account',
  'group_not_listed',
  'meta_event',
  'notice',
  'request',
  'api_response',
  'unsupported_message_type',
] as const;
export type IgnoreReason = (typeof IGNORE_REASONS)[number];

/** What a meta event says about the connection to the implementation. */
export interface ConnectionSignal {
  type: 'heartbeat' | 'lifecycle';
  selfId: string;
  /** Epoch seconds reported by the implementation. */
  time: number;
  /** Heartbeat `status.online`; lifecycle `enable`/`connect` → true, `disable` → false. */
  online?: boolean;
  good?: boolean;
}

export interface PayloadProblem {
  /** Path of the offending field: `group_id`, `message[2].type`, `$` for the whole input. */
  field: string;
  message: string;
}

export type Normalised =
  { accept: AcceptedMessage } | { ignore: IgnoreReason; signal?: ConnectionSignal } | { reject: PayloadProblem };

export const POST_TYPES = ['message', 'message_sent', 'notice', 'request', 'meta_event'] as const;
export type PostType = (typeof POST_TYPES)[number];

/** The post type for metrics labels: one of the known ones, or `other` (bounded label set). */
export function postTypeLabel(input: unknown): PostType | 'other' {
  const postType = isRecord(input) ? input.post_type : undefined;
  return (POST_TYPES as readonly unknown[]).includes(postType) ? (postType as PostType) : 'other';
}

class Rejection extends Error {
  constructor(readonly problem: PayloadProblem) {
    super(`${problem.field}: ${problem.message}`);
  }
}

function reject(field: string, message: string): never {
  throw new Rejection({ field, message });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function shown(value: unknown): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/** A QQ id or message id: an integer or a string of digits. `message_id` may be negative (NapCat int32). */
function readId(record: Record<string, unknown>, field: string, path = field, signed = false): string {
  const value = record[field];
  if (typeof value === 'number' && Number.isSafeInteger(value) && (signed || value >= 0)) return String(value);
  if (typeof value === 'string' && (signed ? /^-?[0-9]{1,20}$/ : /^[0-9]{1,20}$/).test(value)) return value;
  return reject(
    path,
    `must be ${signed ? 'an' : 'a non-negative'} integer or a string of digits (got ${shown(value)})`,
  );
}

function readTime(record: Record<string, unknown>): number {
  const value = record.time;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  if (typeof value === 'string' && /^[0-9]{1,12}$/.test(value)) return Number(value);
  return reject('time', `must be an integer of epoch seconds (got ${shown(value)})`);
}

function optionalText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

/** Every data value becomes a string: numbers and booleans as written, objects as JSON, null as empty. */
function stringValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return '';
  // Parsed JSON holds nothing else but objects and arrays here.
  return JSON.stringify(value) ?? '';
}

function normaliseSegment(raw: unknown, index: number): MessageSegment {
  const path = `message[${index}]`;
  if (!isRecord(raw)) return reject(path, `must be a segment object {type, data} (got ${shown(raw)})`);
  if (typeof raw.type !== 'string' || raw.type.length === 0) {
    return reject(`${path}.type`, `must be a non-empty string (got ${shown(raw.type)})`);
  }
  // `shake` and friends carry `data: {}`; some implementations leave it out or send null.
  if (raw.data !== undefined && raw.data !== null && !isRecord(raw.data)) {
    return reject(`${path}.data`, `must be an object (got ${shown(raw.data)})`);
  }
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw.data ?? {})) data[key] = stringValue(value);
  return { type: raw.type, data };
}

function readSegments(message: unknown): MessageSegment[] {
  if (typeof message === 'string') return parseCqString(message);
  if (Array.isArray(message)) return message.map((raw, i) => normaliseSegment(raw, i));
  // The spec allows a single segment where an array is expected.
  if (isRecord(message)) return [normaliseSegment(message, 0)];
  return reject('message', `must be an array of segments or a CQ string (got ${shown(message)})`);
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
    return '[卡片消息]';
  } catch {
    return '[卡片消息]';
  }
}

/** Plain rendering of one segment; `undefined` for a type without a rendering. */
function render(segment: MessageSegment): string | undefined {
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
      return '[骰子]';
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

function mentionsName(text: string, nicknames: readonly string[]): boolean {
  const lower = text.toLowerCase();
  return nicknames.some((name) => name.length > 0 && lower.includes(name.toLowerCase()));
}

function normaliseMessage(event: Record<string, unknown>, selfId: string, settings: NormaliserSettings): Normalised {
  const messageType = event.message_type;
  if (messageType !== 'group' && messageType !== 'private') {
    if (typeof messageType === 'string' && messageType.length > 0) return { ignore: 'unsupported_message_type' };
    return reject('message_type', `must be "group" or "private" (got ${shown(messageType)})`);
  }
  const messageId = readId(event, 'message_id', 'message_id', true);
  const userId = readId(event, 'user_id');
  const groupId = messageType === 'group' ? readId(event, 'group_id') : `private:${userId}`;
  const sentAt = readTime(event);
  if (event.sender !== undefined && event.sender !== null && !isRecord(event.sender)) {
    return reject('sender', `must be an object (got ${shown(event.sender)})`);
  }
  if (event.anonymous !== undefined && event.anonymous !== null && !isRecord(event.anonymous)) {
    return reject('anonymous', `must be an object or null (got ${shown(event.anonymous)})`);
  }
  const segments = readSegments(event.message);

  if (userId === selfId) return { ignore: 'self_message' };
  if (messageType === 'group' && settings.groups !== '*' && !settings.groups.has(groupId)) {
    return { ignore: 'group_not_listed' };
  }

  const botId = settings.selfId ?? selfId;
  const unknownSegmentTypes: string[] = [];
  let rendered = '';
  let typed = '';
  let mentionsSelf = false;
  let replyToMessageId: string | undefined;
  for (const segment of segments) {
    const text = render(segment);
    if (text === undefined) unknownSegmentTypes.push(segment.type);
    else rendered += text;
    if (segment.type === 'text') typed += segment.data.text ?? '';
    if (segment.type === 'at' && segment.data.qq === botId) mentionsSelf = true;
    if (segment.type === 'reply' && replyToMessageId === undefined && segment.data.id) {
      replyToMessageId = segment.data.id;
    }
  }

  let directReason: DirectReason | undefined;
  if (messageType === 'private') directReason = 'private';
  else if (mentionsSelf) directReason = 'at';
  else if (mentionsName(typed, settings.nicknames)) directReason = 'name';

  const sender = isRecord(event.sender) ? event.sender : {};
  const anonymous = isRecord(event.anonymous) ? event.anonymous : undefined;
  const nickname = optionalText(sender.nickname);
  const card = optionalText(sender.card);
  // An anonymous member shows up under the alias QQ gives them, not the shared anonymous account.
  const alias = anonymous ? optionalText(anonymous.name) : '';
  const { text, truncated } = cut(rendered.trim(), settings.maxTextChars);

  const payload: MessagePayload = {
    messageType,
    selfId,
    messageId,
    sender: { userId, nickname, card, displayName: alias || card || nickname || userId, role: roleOf(sender.role) },
    segments,
    text,
    truncated,
    mentionsSelf,
    sentAt,
  };
  if (typeof event.group_name === 'string' && event.group_name.length > 0) payload.groupName = event.group_name;
  if (replyToMessageId !== undefined) payload.replyToMessageId = replyToMessageId;
  if (directReason !== undefined) payload.directReason = directReason;

  return {
    accept: {
      kind: directReason ? EventKind.MessageDirect : EventKind.MessageObserved,
      groupId,
      userId,
      dedupKey: `${selfId}:${groupId}:${messageId}`,
      payload,
      unknownSegmentTypes,
    },
  };
}

function connectionSignal(event: Record<string, unknown>): ConnectionSignal | undefined {
  const selfId = readId(event, 'self_id');
  const time = readTime(event);
  if (event.meta_event_type === 'heartbeat') {
    const status = isRecord(event.status) ? event.status : {};
    const signal: ConnectionSignal = { type: 'heartbeat', selfId, time };
    if (typeof status.online === 'boolean') signal.online = status.online;
    if (typeof status.good === 'boolean') signal.good = status.good;
    return signal;
  }
  if (event.meta_event_type === 'lifecycle') {
    const online = event.sub_type === 'disable' ? false : true;
    return { type: 'lifecycle', selfId, time, online };
  }
  return undefined;
}

function decide(input: unknown, settings: NormaliserSettings): Normalised {
  if (!isRecord(input)) return reject('$', `must be a JSON object (got ${shown(input)})`);
  const postType = input.post_type;
  if (postType === undefined) {
    // On a WebSocket that also carries API calls, responses arrive between the events.
    if (!('action' in input) && ('retcode' in input || 'echo' in input)) return { ignore: 'api_response' };
    const action = typeof input.action === 'string' ? ` (this is an API request for ${input.action})` : '';
    return reject('post_type', `is required${action}`);
  }
  if (!(POST_TYPES as readonly unknown[]).includes(postType)) {
    return reject('post_type', `must be one of ${POST_TYPES.join(', ')} (got ${shown(postType)})`);
  }
  if (postType === 'meta_event') {
    const signal = connectionSignal(input);
    return signal ? { ignore: 'meta_event', signal } : { ignore: 'meta_event' };
  }
  const selfId = readId(input, 'self_id');
  if (settings.selfId !== undefined && selfId !== settings.selfId) return { ignore: 'other_account' };
  switch (postType as Exclude<PostType, 'meta_event'>) {
    case 'message_sent':
      return { ignore: 'self_message' };
    case 'notice':
      return { ignore: 'notice' };
    case 'request':
      return { ignore: 'request' };
    case 'message':
      return normaliseMessage(input, selfId, settings);
  }
}

export function normaliseOneBotEvent(input: unknown, settings: NormaliserSettings): Normalised {
  try {
    return decide(input, settings);
  } catch (error) {
    if (error instanceof Rejection) return { reject: error.problem };
    throw error;
  }
}

/** The envelope for an accepted message. `now` comes from the clock so replays stay deterministic. */
export function messageEvent(accepted: AcceptedMessage, now: Date): EventOf<MessageKind> {
  const direct = accepted.kind === EventKind.MessageDirect;
  return makeEvent({
    kind: accepted.kind,
    groupId: accepted.groupId,
    payload: accepted.payload,
    source: 'ingress',
    actorIds: [accepted.userId],
    priority: direct ? PRIORITY.direct : PRIORITY.normal,
    createdAt: now,
  });
}
