import { randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';

/** One message the implementation accepted for delivery to QQ: the harness's ground truth of what users saw. */
export interface Delivery {
  /** Arrival order over every transport. */
  seq: number;
  action: string;
  via: 'http' | 'ws';
  messageType: 'group' | 'private';
  /** Group id for group messages, the peer's user id for private ones. */
  targetId: string;
  messageId: number;
  /** Plain text as a member would read it (`@qq` for mentions, quotes left out). */
  text: string;
  message: unknown;
  at: number;
}

export interface OneBotPeerOptions {
  selfId: string;
  accessToken?: string;
  nickname?: string;
}

interface ApiAnswer {
  status: 'ok' | 'failed';
  retcode: number;
  data: unknown;
  message: string;
  wording: string;
}

const SEND_ACTIONS = new Set(['send_group_msg', 'send_private_msg', 'send_msg', 'send_group_forward_msg']);

function ok(data: unknown): ApiAnswer {
  return { status: 'ok', retcode: 0, data, message: '', wording: '' };
}

function failed(retcode: number, message: string): ApiAnswer {
  return { status: 'failed', retcode, data: null, message, wording: message };
}

function idText(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) return value;
  return undefined;
}

const CQ = /\[CQ:([a-z_]+)((?:,[^\]]*)?)\]/gi;

/** The text of a OneBot message as a member reads it, in either format; quotes (reply segments) left out. */
export function plainText(message: unknown): string {
  if (typeof message === 'string') {
    return message
      .replace(CQ, (_, type: string, params: string) =>
        type === 'at' ? `@${/qq=([^,\]]*)/.exec(params)?.[1] ?? ''}` : type === 'reply' ? '' : `[${type}]`,
      )
      .replace(/&#91;/g, '[')
      .replace(/&#93;/g, ']')
      .replace(/&amp;/g, '&');
  }
  if (!Array.isArray(message)) return '';
  return message
    .map((segment: { type?: unknown; data?: Record<string, unknown> }) => {
      const data = segment?.data ?? {};
      switch (segment?.type) {
        case 'text':
          return typeof data.text === 'string' ? data.text : '';
        case 'at':
          return `@${typeof data.qq === 'string' || typeof data.qq === 'number' ? data.qq : ''}`;
        case 'reply':
          return '';
        case 'node':
          return plainText(data.content);
        default:
          return `[${String(segment?.type)}]`;
      }
    })
    .join('');
}

/**
 * The OneBot v11 implementation the harnesses talk to, standing in for NapCat: the HTTP API (`/<action>`), a
 * WebSocket server for forward WS (events pushed to ingress, API frames answered), and a reverse WS client
 * (connects to ingress's `/onebot/v11/ws`). Every accepted send is appended to `deliveries` — what the harness
 * checks duplicates, order and unanswered mentions against — and `get_msg` / `get_group_msg_history` answer from
 * that record, so an outbound that verifies an unknown outcome sees the truth.
 */
export class OneBotPeer {
  readonly deliveries: Delivery[] = [];
  /** Frames ingress sent back on a WebSocket that were not API calls (error frames for refused events). */
  readonly eventReplies: unknown[] = [];
  apiCalls = 0;
  unauthorizedCalls = 0;

  private http: Server | undefined;
  private wss: WebSocketServer | undefined;
  private readonly forwardClients = new Set<WebSocket>();
  private seq = 0;
  private nextMessageId = randomInt(100_000_000, 1_000_000_000);
  private readonly listeners = new Set<(delivery: Delivery) => void>();

  constructor(private readonly options: OneBotPeerOptions) {}

  async start(): Promise<void> {
    const http = createServer((req, res) => void this.onHttp(req, res));
    http.keepAliveTimeout = 5000;
    const wss = new WebSocketServer({ noServer: true });
    http.on('upgrade', (req, socket, head) => {
      if (!this.authorized(req)) {
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        this.forwardClients.add(ws);
        ws.on('close', () => this.forwardClients.delete(ws));
        ws.on('error', () => undefined);
        ws.on('message', (data) => this.onFrame(ws, data));
      });
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
    this.http = http;
    this.wss = wss;
  }

  /** `ONEBOT_HTTP_API_URL`. */
  get url(): string {
    return `http://127.0.0.1:${(this.http!.address() as AddressInfo).port}`;
  }

  /** `ONEBOT_WS_URL` (forward WebSocket: ingress connects here). */
  get wsUrl(): string {
    return `ws://127.0.0.1:${(this.http!.address() as AddressInfo).port}/`;
  }

  get forwardConnections(): number {
    return this.forwardClients.size;
  }

  onDelivery(listener: (delivery: Delivery) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Push one frame to every forward-WS client (ingress); false when none is connected. */
  pushForward(frame: string): boolean {
    let sent = false;
    for (const ws of this.forwardClients) {
      if (ws.readyState === WebSocket.OPEN) {
        ws.send(frame);
        sent = true;
      }
    }
    return sent;
  }

  /**
   * Connect to ingress as an implementation configured for reverse WebSocket does (NapCat's headers), answering
   * API frames outbound may send on it. Resolves when open.
   */
  async connectReverse(ingressWsUrl: string, role = 'Universal'): Promise<WebSocket> {
    const headers: Record<string, string> = { 'X-Self-ID': this.options.selfId, 'X-Client-Role': role };
    if (this.options.accessToken) headers.Authorization = `Bearer ${this.options.accessToken}`;
    const ws = new WebSocket(ingressWsUrl, { headers });
    ws.on('message', (data) => this.onFrame(ws, data));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.on('error', () => undefined);
    return ws;
  }

  async stop(): Promise<void> {
    for (const ws of this.forwardClients) ws.terminate();
    this.wss?.close();
    const http = this.http;
    this.http = undefined;
    if (!http) return;
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  }

  private authorized(req: IncomingMessage): boolean {
    const token = this.options.accessToken;
    if (!token) return true;
    const header = req.headers.authorization?.trim();
    if (header !== undefined) return header === `Bearer ${token}` || header === `Token ${token}`;
    return new URL(req.url ?? '/', 'http://peer').searchParams.get('access_token') === token;
  }

  private async onHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://peer');
    const action = url.pathname.replace(/^\/+|\/+$/g, '');
    let params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (raw.length > 0) {
      try {
        params = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return answerHttp(res, 400, failed(1400, 'request body is not JSON'));
      }
    }
    if (!this.authorized(req)) {
      this.unauthorizedCalls += 1;
      return answerHttp(res, 401, failed(1401, 'token verify failed'));
    }
    answerHttp(res, 200, this.perform(action, params, 'http'));
  }

  private onFrame(ws: WebSocket, data: RawData): void {
    const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)).toString('utf8');
    let frame: { action?: unknown; params?: unknown; echo?: unknown };
    try {
      frame = JSON.parse(text) as typeof frame;
    } catch {
      this.eventReplies.push(text);
      return;
    }
    if (typeof frame.action !== 'string') {
      this.eventReplies.push(frame);
      return;
    }
    const params = (typeof frame.params === 'object' && frame.params !== null ? frame.params : {}) as Record<
      string,
      unknown
    >;
    const answer = this.perform(frame.action, params, 'ws');
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ ...answer, echo: frame.echo ?? null }));
  }

  private perform(action: string, params: Record<string, unknown>, via: 'http' | 'ws'): ApiAnswer {
    this.apiCalls += 1;
    if (SEND_ACTIONS.has(action)) return this.send(action, params, via);
    switch (action) {
      case 'get_login_info':
        return ok({ user_id: Number(this.options.selfId), nickname: this.options.nickname ?? '小满' });
      case 'get_status':
        return ok({ online: true, good: true, stat: {} });
      case 'get_version_info':
        return ok({ app_name: 'NapCat.Onebot', protocol_version: 'v11', app_version: 'qunli-harness' });
      case 'get_group_info':
        return ok({ group_id: Number(params.group_id), group_name: `群${String(params.group_id)}`, member_count: 50 });
      case 'get_msg': {
        const found = this.deliveries.find((d) => String(d.messageId) === idText(params.message_id));
        return found ? ok(this.asMessage(found)) : failed(1404, '消息不存在');
      }
      case 'get_group_msg_history': {
        const group = idText(params.group_id);
        const count = Math.min(Number(params.count ?? 20) || 20, 200);
        const history = this.deliveries.filter((d) => d.messageType === 'group' && d.targetId === group);
        return ok({ messages: history.slice(-count).map((d) => this.asMessage(d)) });
      }
      case 'get_friend_msg_history': {
        const user = idText(params.user_id);
        const count = Math.min(Number(params.count ?? 20) || 20, 200);
        const history = this.deliveries.filter((d) => d.messageType === 'private' && d.targetId === user);
        return ok({ messages: history.slice(-count).map((d) => this.asMessage(d)) });
      }
      case 'delete_msg':
        return ok(null);
      default:
        return failed(1404, `不支持的api ${action}`);
    }
  }

  private send(action: string, params: Record<string, unknown>, via: 'http' | 'ws'): ApiAnswer {
    const groupId = idText(params.group_id);
    const userId = idText(params.user_id);
    const group =
      action === 'send_group_msg' ||
      action === 'send_group_forward_msg' ||
      (action === 'send_msg' && (params.message_type === 'group' || (params.message_type !== 'private' && groupId)));
    const targetId = group ? groupId : userId;
    if (targetId === undefined) return failed(1400, `missing ${group ? 'group_id' : 'user_id'}`);
    const message = action === 'send_group_forward_msg' ? params.messages : params.message;
    if (typeof message !== 'string' && !Array.isArray(message)) return failed(1400, 'missing message');
    this.nextMessageId = this.nextMessageId >= 2_147_483_000 ? 100_000_000 : this.nextMessageId + 1;
    const delivery: Delivery = {
      seq: ++this.seq,
      action,
      via,
      messageType: group ? 'group' : 'private',
      targetId,
      messageId: this.nextMessageId,
      text: plainText(message),
      message,
      at: Date.now(),
    };
    this.deliveries.push(delivery);
    for (const listener of this.listeners) listener(delivery);
    return ok({ message_id: delivery.messageId });
  }

  private asMessage(d: Delivery): Record<string, unknown> {
    return {
      self_id: Number(this.options.selfId),
      user_id: Number(this.options.selfId),
      time: Math.floor(d.at / 1000),
      message_id: d.messageId,
      message_seq: d.messageId,
      real_id: d.messageId,
      message_type: d.messageType,
      sender: { user_id: Number(this.options.selfId), nickname: this.options.nickname ?? '小满', card: '' },
      raw_message: d.text,
      message: typeof d.message === 'string' ? [{ type: 'text', data: { text: d.text } }] : d.message,
      message_format: 'array',
      post_type: 'message',
      ...(d.messageType === 'group' && { group_id: Number(d.targetId) }),
    };
  }
}

function answerHttp(res: ServerResponse, status: number, body: ApiAnswer): void {
  if (res.destroyed) return;
  const text = JSON.stringify({ ...body, echo: null });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
