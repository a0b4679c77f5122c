import type { ApiOutcome } from './api-outcome.rules.js';
import type { OneBotSegment, SendMessageResult } from './onebot-types.js';

/** How an API call reaches the implementation. */
export const API_TRANSPORTS = ['http', 'ws_forward', 'ws_reverse'] as const;
export type ApiTransport = (typeof API_TRANSPORTS)[number];

/**
 * One way to call OneBot v11 actions: the HTTP API, a forward WebSocket, or the reverse-WebSocket connection an
 * implementation holds to ingress. Every call resolves to a classified outcome and never throws for anything the
 * peer or the network did (see `api-outcome.rules.ts`): `unreachable` means nothing left, `unknown` means the
 * request may have been acted on.
 */
export interface OneBotApi {
  readonly transport: ApiTransport;
  call<T>(action: string, params: Record<string, unknown>): Promise<ApiOutcome<T>>;
  close(): Promise<void>;
}

/** OneBot ids are numbers in the spec; QQ numbers always fit a double exactly, odd ids are passed through. */
export function onebotId(id: string): number | string {
  return /^-?[0-9]{1,15}$/.test(id) ? Number(id) : id;
}

export type Conversation = { type: 'group'; groupId: string } | { type: 'private'; userId: string };

/** One node of a forward message (`send_group_forward_msg`): shown as sent by `name` (`uin`). */
export interface ForwardNode {
  name: string;
  uin: string;
  content: OneBotSegment[];
}

export interface ForwardResult {
  message_id: number;
  /** NapCat: the forward's resource id. */
  res_id?: string;
}

/** A message as history actions return it (NapCat: full message events). */
export interface HistoryMessage {
  message_id?: unknown;
  user_id?: unknown;
  time?: unknown;
  message?: unknown;
  raw_message?: unknown;
  sender?: { user_id?: unknown };
  post_type?: unknown;
}

export interface HistoryResult {
  messages?: HistoryMessage[];
}

/** The actions outbound uses, over whichever transport. */
export class OneBotActions {
  constructor(readonly api: OneBotApi) {}

  sendMessage(to: Conversation, message: OneBotSegment[]): Promise<ApiOutcome<SendMessageResult>> {
    return to.type === 'group'
      ? this.api.call<SendMessageResult>('send_group_msg', { group_id: onebotId(to.groupId), message })
      : this.api.call<SendMessageResult>('send_private_msg', { user_id: onebotId(to.userId), message });
  }

  sendForward(to: Conversation, nodes: ForwardNode[]): Promise<ApiOutcome<ForwardResult>> {
    const messages = nodes.map((node) => ({
      type: 'node',
      data: { name: node.name, uin: node.uin, user_id: node.uin, nickname: node.name, content: node.content },
    }));
    return to.type === 'group'
      ? this.api.call<ForwardResult>('send_group_forward_msg', { group_id: onebotId(to.groupId), messages })
      : this.api.call<ForwardResult>('send_private_forward_msg', { user_id: onebotId(to.userId), messages });
  }

  /** The conversation's newest messages (NapCat `get_group_msg_history` / `get_friend_msg_history`). */
  recentHistory(to: Conversation, count: number): Promise<ApiOutcome<HistoryResult>> {
    return to.type === 'group'
      ? this.api.call<HistoryResult>('get_group_msg_history', { group_id: onebotId(to.groupId), count })
      : this.api.call<HistoryResult>('get_friend_msg_history', { user_id: onebotId(to.userId), count });
  }

  getMsg(messageId: string): Promise<ApiOutcome<HistoryMessage>> {
    return this.api.call<HistoryMessage>('get_msg', { message_id: onebotId(messageId) });
  }
}
