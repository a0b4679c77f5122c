/**
 * OneBot v11 as it travels on the wire. Implementations disagree on types (ids as numbers or strings, segment
 * data values as strings or numbers), so these types describe what we send and the loosest shape we accept.
 */

/** One message segment in array format (`{type: 'text', data: {text: 'hi'}}`). */
export interface OneBotSegment {
  type: string;
  data: Record<string, string | number | boolean | null | undefined | object>;
}

/** A message as an API parameter or an event field: array format or a CQ string. */
export type OneBotMessage = OneBotSegment[] | string;

/** The response envelope of every action (HTTP body or WS frame). */
export interface OneBotApiResponse<T = unknown> {
  /** `ok`, `failed` or `async` (spec); typed loosely because implementations are what they are. */
  status: string;
  retcode: number;
  data?: T | null;
  /** NapCat and newer implementations. */
  message?: string;
  wording?: string;
  /** go-cqhttp. */
  msg?: string;
  echo?: unknown;
  stream?: string;
}

export interface SendMessageResult {
  /** NapCat: a signed int32. */
  message_id: number;
}

export interface LoginInfo {
  user_id: number;
  nickname: string;
}

/** Builders for the segments outbound sends. Data values are strings, as NapCat reports them. */
export const Segment = {
  text(text: string): OneBotSegment {
    return { type: 'text', data: { text } };
  },
  at(qq: string, name?: string): OneBotSegment {
    return { type: 'at', data: name === undefined ? { qq } : { qq, name } };
  },
  reply(messageId: string): OneBotSegment {
    return { type: 'reply', data: { id: messageId } };
  },
} as const;
