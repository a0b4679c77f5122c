import { renderPlainText, type HistoryMessage, type OneBotSegment } from '@app/onebot';
import type { ReplyForm } from './send-ledger.js';

/**
 * Finding a part in the implementation's recent history (`get_group_msg_history` / `get_friend_msg_history`):
 * a message of the bot's own account, written no earlier than the call that may have sent it (with slack for the
 * two clocks), whose text is the part's text (quote and automatic @ aside), and not already known as another
 * send of ours. The oldest such message is the one.
 */
export interface PartToFind {
  selfId: string;
  text: string;
  form: ReplyForm;
  /** Wall-clock epoch ms of the call. */
  calledAt: number;
  /** Message ids already accounted for (the bot's sends recorded in the sent-ids store). */
  claimed: ReadonlySet<string>;
}

/** Seconds a history message may seem older than our call (clock skew between us and the implementation). */
export const CLOCK_SLACK_SECONDS = 10;

function idOf(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && value.length > 0) return value;
  return undefined;
}

function segmentsOf(message: HistoryMessage): OneBotSegment[] {
  if (Array.isArray(message.message)) return message.message as OneBotSegment[];
  if (typeof message.message === 'string') return [{ type: 'text', data: { text: message.message } }];
  return [];
}

/** The text a part becomes on the wire, the way it is compared. */
export function comparableText(segments: readonly OneBotSegment[]): string {
  const body = segments.filter((s) => s.type !== 'reply');
  // The QQ client adds the quoted author's @ after a quote; a part we sent has none, but the history may.
  if (segments[0]?.type === 'reply' && body[0]?.type === 'at') body.shift();
  return renderPlainText(body).trim();
}

export function findDelivered(history: readonly HistoryMessage[], part: PartToFind): string | undefined {
  const since = Math.floor(part.calledAt / 1000) - CLOCK_SLACK_SECONDS;
  const candidates = history
    .filter((message) => {
      const author = idOf(message.user_id) ?? idOf(message.sender?.user_id);
      if (author !== part.selfId) return false;
      const id = idOf(message.message_id);
      if (id === undefined || part.claimed.has(id)) return false;
      const time = typeof message.time === 'number' ? message.time : Number(message.time);
      if (Number.isFinite(time) && time < since) return false;
      const segments = segmentsOf(message);
      if (part.form === 'forward') return segments.some((s) => s.type === 'forward');
      return comparableText(segments) === part.text.trim();
    })
    .sort((a, b) => Number(a.time ?? 0) - Number(b.time ?? 0));
  return idOf(candidates[0]?.message_id);
}
