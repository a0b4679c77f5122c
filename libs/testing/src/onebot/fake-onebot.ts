import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import {
  readBody,
  renderPlainText,
  signBody,
  toSegments,
  type OneBotApiResponse,
  type OneBotMessage,
  type OneBotSegment,
} from '@app/onebot';
import {
  napcatGroupMessage,
  napcatHeartbeat,
  napcatLifecycle,
  napcatMessageSent,
  nextMessageId,
  type GroupMessageSpec,
} from './napcat-events.js';

export interface FakeOneBotOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** When set, API calls (HTTP and WebSocket) must carry it, and reports carry it as `Authorization: Bearer`. */
  accessToken?: string;
  /** When set, HTTP POST reports are signed with `X-Signature: sha1=<HMAC-SHA1(raw body)>`. */
  secret?: string;
  /** The bot's QQ number (`self_id`). */
  selfId?: string;
  nickname?: string;
  /** Delay before every API response. */
  latencyMs?: number;
  /** Report the bot's own sent messages to this ingress URL as `post_type: message_sent` (NapCat reportSelfMessage). */
  reportSelfMessagesTo?: string;
  /**
   * Serialise reports with every non-ASCII character escaped (`\u4f60`), as some implementations do: a receiver
   * that verifies the signature over re-serialised JSON instead of the raw body then fails.
   */
  asciiJson?: boolean;
  /** Answer `send_*_forward_msg` (NapCat does); false answers 1404 like implementations without it. */
  supportsForward?: boolean;
  /** Answer `get_group_msg_history` / `get_friend_msg_history` (NapCat does). */
  supportsHistory?: boolean;
  /** Heartbeat period on WebSocket connections (ms). NapCat's default is 30 s. */
  heartbeatMs?: number;
}

/** One API request as the fake received it, in arrival order. */
export interface FakeOneBotCall {
  seq: number;
  action: string;
  params: Record<string, unknown>;
  authorized: boolean;
  transport: 'http' | 'ws';
  receivedAt: Date;
  /** Set once the response was written (never, for a dropped response). */
  response?: OneBotApiResponse;
}

/** A message the fake delivered (recorded when received, even while its response is held). */
export interface FakeSentMessage {
  seq: number;
  action: string;
  messageType: 'group' | 'private';
  groupId?: string;
  userId?: string;
  messageId: number;
  segments: OneBotSegment[];
  /** Plain text of the message without the quote (`@name` for mentions; `[forward]` for a forward). */
  text: string;
  /** The texts of a forward message's nodes. */
  forwardTexts?: string[];
  /** Message id of the quoted message, when the message starts with a reply segment. */
  replyTo?: string;
  receivedAt: Date;
}

export interface PostResult {
  status: number;
  body: string;
  event: Record<string, unknown>;
}

export interface PostGroupMessageSpec extends Omit<GroupMessageSpec, 'selfId'> {
  ingressUrl: string;
  /** Defaults to the fake's own `selfId`. */
  selfId?: string;
}

/**
 * What the next send does, instead of answering `ok`:
 * - `fail`: answer `retcode` (NapCat-shaped); `delivered` says whether QQ got the message anyway (1200 under risk
 *   control often means it did);
 * - `drop`: never answer (HTTP: the socket is destroyed; WebSocket: no frame comes back);
 * - `silent`: answer `status: ok` without a `message_id`, and deliver nothing (a silent drop).
 */
export type SendScript =
  { kind: 'fail'; retcode: number; delivered?: boolean } | { kind: 'drop'; delivered?: boolean } | { kind: 'silent' };

export interface ReverseConnection {
  socket: WebSocket;
  close(): Promise<void>;
}

export interface ReverseOptions {
  /** `X-Client-Role`: NapCat always says `Universal`. */
  role?: string;
  /** Overrides the token sent (`''` sends NapCat's empty `Bearer `). */
  token?: string;
  /** Put the token in `?access_token=` instead of the header. */
  tokenInQuery?: boolean;
  /** `X-Self-ID` header (defaults to the fake's self id). */
  selfId?: string;
}

const SEND_ACTIONS = new Set(['send_group_msg', 'send_private_msg', 'send_msg']);
const FORWARD_ACTIONS = new Set(['send_group_forward_msg', 'send_private_forward_msg', 'send_forward_msg']);

/** NapCat's answer for a handler timeout, which it also gives when risk control swallowed the send. */
const NAPCAT_MESSAGES: Record<number, string> = {
  200: 'Timeout: NTEvent serviceAndMethod:NodeIKernelMsgService/sendMsg ListenerName:NodeIKernelMsgListener/onMsgInfoListUpdate EventRet:\n{}\n',
  1200: 'Timeout: NTEvent serviceAndMethod:NodeIKernelMsgService/sendMsg ListenerName:NodeIKernelMsgListener/onMsgInfoListUpdate EventRet: {"result": 0, "errMsg": ""}',
  100: 'SEND_MSG_API_ERROR',
};

function napcatResponse<T>(retcode: number, data: T | null, message = ''): OneBotApiResponse<T> {
  return { status: retcode === 0 ? 'ok' : 'failed', retcode, data, message, wording: message, echo: null };
}

function idText(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && /^-?[0-9]+$/.test(value)) return value;
  return undefined;
}

/** JSON with every non-ASCII character escaped, as Go's and some Python serialisers write it. */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

interface Performed {
  /** `undefined`: no answer at all (a dropped response). */
  response: OneBotApiResponse | undefined;
  sent?: FakeSentMessage;
}

/**
 * A real OneBot v11 implementation double that behaves like NapCat, on every transport:
 * - HTTP API (`POST /<action>`, Bearer or `?access_token=`), NapCat-shaped answers and retcodes (HTTP 200/400,
 *   WebSocket 1200/1400);
 * - forward WebSocket server on the same port (universal: action frames with `echo`, events pushed, lifecycle
 *   `connect` then heartbeats);
 * - reverse WebSocket client (`connectReverse`) with NapCat's headers: `X-Self-ID`, `X-Client-Role: Universal`,
 *   `Authorization: Bearer <token>` — an empty `Bearer ` when no token is configured;
 * - HTTP POST reports (`postEvent`) with `X-Self-ID` and `X-Signature: sha1=` over the exact body sent.
 * It keeps each conversation's history (`get_group_msg_history`, `get_friend_msg_history`, `get_msg`) and lets a
 * test script risk control (1200 that delivered anyway), dropped responses and silent drops.
 */
export class FakeOneBot {
  readonly calls: FakeOneBotCall[] = [];
  readonly sentMessages: FakeSentMessage[] = [];
  latencyMs: number;
  selfId: string;
  nickname: string;
  supportsForward: boolean;
  supportsHistory: boolean;
  /** Errors met while reporting self messages (the ingress was down, refused them …). */
  readonly reportErrors: string[] = [];
  /** Frames received on WebSocket connections that were not action requests (error frames from ingress …). */
  readonly otherFrames: unknown[] = [];
  /** WebSocket connections opened so far (forward clients accepted and reverse connections made). */
  connectionsOpened = 0;

  private server: Server | undefined;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<WebSocket>();
  private readonly heartbeats = new Map<WebSocket, NodeJS.Timeout>();
  private holding = false;
  private held: (() => void)[] = [];
  private scripts: SendScript[] = [];
  private seq = 0;
  private readonly sendListeners = new Set<(message: FakeSentMessage) => void>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private waiters: { count: number; resolve: () => void }[] = [];
  /** Every message of every conversation (people's and the bot's), oldest first: `g:<id>` / `p:<id>`. */
  private readonly history = new Map<string, Record<string, unknown>[]>();

  constructor(private readonly options: FakeOneBotOptions = {}) {
    this.latencyMs = options.latencyMs ?? 0;
    this.selfId = options.selfId ?? '10001';
    this.nickname = options.nickname ?? '机器人';
    this.supportsForward = options.supportsForward ?? true;
    this.supportsHistory = options.supportsHistory ?? true;
  }

  /** Start listening; resolves to the base URL (`http://127.0.0.1:<port>`), the value for ONEBOT_HTTP_API_URL. */
  async start(): Promise<string> {
    const server = createServer((req, res) => {
      void this.handleRequest(req, res);
    });
    server.keepAliveTimeout = 5000;
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    return this.url;
  }

  get url(): string {
    if (!this.server) throw new Error('FakeOneBot is not started');
    const address = this.server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  /** The forward WebSocket URL (`ONEBOT_WS_URL`). */
  get wsUrl(): string {
    return this.url.replace(/^http/, 'ws');
  }

  get port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? 0;
  }

  /** Open WebSocket connections (forward clients and reverse connections). */
  get connections(): number {
    return [...this.sockets].filter((s) => s.readyState === WebSocket.OPEN).length;
  }

  async stop(): Promise<void> {
    this.releaseSends();
    for (const timer of this.heartbeats.values()) clearInterval(timer);
    for (const socket of this.sockets) socket.terminate();
    this.sockets.clear();
    await Promise.allSettled([...this.inFlight]);
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Forget every recorded call and pending script (the server keeps running, history stays). */
  reset(): void {
    this.calls.length = 0;
    this.sentMessages.length = 0;
    this.scripts = [];
    this.reportErrors.length = 0;
  }

  /** Keep accepting sends (recorded and delivered) but hold every send response until `releaseSends()`. */
  holdSends(): void {
    this.holding = true;
  }

  releaseSends(): void {
    this.holding = false;
    const held = this.held;
    this.held = [];
    for (const release of held) release();
  }

  get heldSends(): number {
    return this.held.length;
  }

  /** Script what the next sends do (in order); sends beyond the script succeed. */
  script(...scripts: SendScript[]): void {
    this.scripts.push(...scripts);
  }

  /** Answer the next `n` send calls with `retcode`; `delivered` says whether QQ got them anyway. */
  failNext(n: number, retcode: number, options: { delivered?: boolean } = {}): void {
    for (let i = 0; i < n; i++) this.scripts.push({ kind: 'fail', retcode, ...options });
  }

  /** Resolves once `n` messages in total were delivered; rejects after `timeoutMs` naming what arrived. */
  waitForSends(n: number, timeoutMs = 10_000): Promise<FakeSentMessage[]> {
    if (this.sentMessages.length >= n) return Promise.resolve(this.sentMessages.slice());
    return new Promise((resolve, reject) => {
      const waiter = {
        count: n,
        resolve: () => {
          clearTimeout(timer);
          resolve(this.sentMessages.slice());
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(
          new Error(
            `FakeOneBot: waited ${timeoutMs} ms for ${n} sends, got ${this.sentMessages.length}: ` +
              JSON.stringify(this.sentMessages.map((m) => m.text)),
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Called for every delivered message, as it is received. Returns the unsubscribe function. */
  onSend(listener: (message: FakeSentMessage) => void): () => void {
    this.sendListeners.add(listener);
    return () => this.sendListeners.delete(listener);
  }

  /** Put a message into a conversation's history, as if someone had said it (what `post*` and `emit` do too). */
  remember(event: Record<string, unknown>): void {
    const type = event.message_type;
    if (event.post_type !== 'message' && event.post_type !== 'message_sent') return;
    const key =
      type === 'group' ? `g:${idText(event.group_id)}` : `p:${idText(event.target_id) ?? idText(event.user_id)}`;
    const list = this.history.get(key) ?? [];
    list.push(event);
    this.history.set(key, list);
  }

  /** POST one event to an ingress as NapCat's HTTP POST reporter does (token, signature, X-Self-ID). */
  async postEvent(ingressUrl: string, event: Record<string, unknown>): Promise<PostResult> {
    this.remember(event);
    const body = this.options.asciiJson ? asciiJson(event) : JSON.stringify(event);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-self-id': typeof event.self_id === 'number' ? String(event.self_id) : this.selfId,
    };
    if (this.options.accessToken) headers.authorization = `Bearer ${this.options.accessToken}`;
    if (this.options.secret) headers['x-signature'] = signBody(this.options.secret, body);
    const response = await fetch(ingressUrl, { method: 'POST', headers, body });
    return { status: response.status, body: await response.text(), event };
  }

  /** Build a NapCat-shaped array-format group message and POST it to the ingress. */
  postGroupMessage(spec: PostGroupMessageSpec): Promise<PostResult> {
    const { ingressUrl, selfId, ...message } = spec;
    return this.postEvent(ingressUrl, napcatGroupMessage({ ...message, selfId: selfId ?? this.selfId }));
  }

  /** Push an event to every open WebSocket connection (forward clients and reverse connections). */
  emit(event: Record<string, unknown>): number {
    this.remember(event);
    const frame = JSON.stringify(event);
    let sent = 0;
    for (const socket of this.sockets) {
      if (socket.readyState !== WebSocket.OPEN) continue;
      socket.send(frame);
      sent++;
    }
    return sent;
  }

  /**
   * Go silent without closing anything: no more heartbeats on any connection (a half-open link, a hung
   * implementation). A client with a heartbeat watchdog drops the connection.
   */
  silence(): void {
    for (const timer of this.heartbeats.values()) clearInterval(timer);
    this.heartbeats.clear();
  }

  /** Send a raw frame (malformed input, for fuzzing) on every open connection. */
  emitRaw(frame: string | Buffer): number {
    let sent = 0;
    for (const socket of this.sockets) {
      if (socket.readyState !== WebSocket.OPEN) continue;
      socket.send(frame);
      sent++;
    }
    return sent;
  }

  /**
   * Connect to an ingress's reverse WebSocket endpoint the way NapCat does. Resolves once open (after sending the
   * lifecycle `connect` event); rejects with the HTTP status when the upgrade is refused.
   */
  async connectReverse(url: string, options: ReverseOptions = {}): Promise<ReverseConnection> {
    const token = options.token ?? this.options.accessToken ?? '';
    const target = new URL(url);
    const headers: Record<string, string> = {
      'X-Self-ID': options.selfId ?? this.selfId,
      'X-Client-Role': options.role ?? 'Universal',
      'User-Agent': 'OneBot/11',
    };
    if (options.tokenInQuery) target.searchParams.set('access_token', token);
    // NapCat writes the header even without a token: `Bearer ` with nothing after it.
    else headers.Authorization = `Bearer ${token}`;
    const socket = new WebSocket(target, { headers });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('unexpected-response', (_req, res) => {
        reject(new Error(`reverse WebSocket refused: HTTP ${res.statusCode}`));
        socket.terminate();
      });
      socket.once('error', reject);
    });
    this.adopt(socket, options.selfId ?? this.selfId);
    return {
      socket,
      close: () =>
        new Promise<void>((resolve) => {
          if (socket.readyState === WebSocket.CLOSED) return resolve();
          socket.once('close', () => resolve());
          socket.close(1000, 'bye');
        }),
    };
  }

  /** The request listener; exposed so a host server (the chat simulator) can mount the API next to its own routes. */
  async handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const work = this.answerHttp(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        reply(res, 500, napcatResponse(500, null, error instanceof Error ? error.message : String(error)));
      }
    });
    this.inFlight.add(work);
    try {
      await work;
    } finally {
      this.inFlight.delete(work);
    }
  }

  /** Upgrade handler for a host server (the simulator) that wants to offer the forward WebSocket too. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (!this.tokenOk(req.headers.authorization, url)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.adopt(ws, this.selfId));
  }

  private adopt(socket: WebSocket, selfId: string): void {
    this.sockets.add(socket);
    this.connectionsOpened++;
    socket.send(JSON.stringify(napcatLifecycle(selfId, 'connect')));
    const period = this.options.heartbeatMs ?? 30_000;
    const timer = setInterval(() => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(napcatHeartbeat(selfId, period)));
    }, period);
    timer.unref();
    this.heartbeats.set(socket, timer);
    socket.on('message', (data: RawData) => {
      const text = Buffer.isBuffer(data)
        ? data.toString('utf8')
        : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]).toString('utf8');
      const work = this.answerFrame(socket, text);
      this.inFlight.add(work);
      void work.finally(() => this.inFlight.delete(work));
    });
    socket.on('close', () => {
      clearInterval(timer);
      this.heartbeats.delete(socket);
      this.sockets.delete(socket);
    });
    socket.on('error', () => undefined);
  }

  private async answerFrame(socket: WebSocket, text: string): Promise<void> {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      frame = undefined;
    }
    const request = frame as { action?: unknown; params?: unknown; echo?: unknown } | undefined;
    if (typeof request !== 'object' || request === null || typeof request.action !== 'string') {
      this.otherFrames.push(frame ?? text);
      return;
    }
    const params =
      typeof request.params === 'object' && request.params !== null && !Array.isArray(request.params)
        ? (request.params as Record<string, unknown>)
        : {};
    const call: FakeOneBotCall = {
      seq: ++this.seq,
      action: request.action,
      params,
      authorized: true,
      transport: 'ws',
      receivedAt: new Date(),
    };
    this.calls.push(call);
    const { response } = await this.performAndWait(request.action, params, call.seq, 'ws');
    if (response === undefined) return;
    // NapCat echoes the echo back exactly as sent, and `null` when none was sent.
    const answer = { ...response, echo: request.echo ?? null };
    call.response = answer;
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(answer));
  }

  private async answerHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const action = url.pathname.replace(/^\/+|\/+$/g, '');
    const raw = await readBody(req);
    let params: Record<string, unknown>;
    if (req.method === 'GET') {
      params = Object.fromEntries(url.searchParams);
    } else {
      try {
        const parsed: unknown = raw.length === 0 ? {} : JSON.parse(raw);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        params = parsed as Record<string, unknown>;
      } catch {
        reply(res, 400, napcatResponse(400, null, 'request body is not a JSON object'));
        return;
      }
    }
    const authorized = this.tokenOk(req.headers.authorization, url);
    const call: FakeOneBotCall = {
      seq: ++this.seq,
      action,
      params,
      authorized,
      transport: 'http',
      receivedAt: new Date(),
    };
    this.calls.push(call);
    if (!authorized) {
      const missing = !req.headers.authorization && !url.searchParams.has('access_token');
      call.response = napcatResponse(missing ? 401 : 403, null, 'token verify failed');
      reply(res, missing ? 401 : 403, call.response);
      return;
    }
    const { response } = await this.performAndWait(action, params, call.seq, 'http');
    if (response === undefined) {
      res.destroy();
      return;
    }
    call.response = response;
    reply(res, 200, response);
  }

  private tokenOk(header: string | undefined, url: URL): boolean {
    const token = this.options.accessToken;
    if (!token) return true;
    if (header !== undefined && header.trim() !== 'Bearer') {
      return header.trim() === `Bearer ${token}` || header.trim() === `Token ${token}`;
    }
    return url.searchParams.get('access_token') === token;
  }

  private async performAndWait(
    action: string,
    params: Record<string, unknown>,
    seq: number,
    transport: 'http' | 'ws',
  ): Promise<Performed> {
    const performed = this.perform(action, params, seq, transport);
    if (performed.sent && this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
    if (this.latencyMs > 0) await delay(this.latencyMs);
    if (performed.sent && this.options.reportSelfMessagesTo)
      this.reportSelf(performed.sent, this.options.reportSelfMessagesTo);
    return performed;
  }

  private perform(action: string, params: Record<string, unknown>, seq: number, transport: 'http' | 'ws'): Performed {
    if (SEND_ACTIONS.has(action) || FORWARD_ACTIONS.has(action)) return this.send(action, params, seq, transport);
    const ok = <T>(data: T): Performed => ({ response: napcatResponse(0, data) });
    switch (action) {
      case 'get_login_info':
        return ok({ user_id: Number(this.selfId), nickname: this.nickname });
      case 'get_group_info': {
        const groupId = idText(params.group_id);
        if (groupId === undefined) return { response: missingProperty('group_id', transport) };
        return ok({
          group_id: Number(groupId),
          group_name: `测试群 ${groupId}`,
          member_count: 42,
          max_member_count: 500,
        });
      }
      case 'get_status':
        return ok({ online: true, good: true, stat: {} });
      case 'get_version_info':
        return ok({ app_name: 'NapCat.Onebot', protocol_version: 'v11', app_version: 'fake' });
      case 'get_group_msg_history':
      case 'get_friend_msg_history': {
        if (!this.supportsHistory) return { response: napcatResponse(1404, null, `不支持的api ${action}`) };
        const group = action === 'get_group_msg_history';
        const id = idText(group ? params.group_id : params.user_id);
        if (id === undefined) return { response: missingProperty(group ? 'group_id' : 'user_id', transport) };
        const count = Math.max(1, Math.min(100, Number(params.count ?? 20) || 20));
        const list = this.history.get(`${group ? 'g' : 'p'}:${id}`) ?? [];
        return ok({ messages: list.slice(-count) });
      }
      case 'get_msg': {
        const id = idText(params.message_id);
        for (const list of this.history.values()) {
          const found = list.find((m) => idText(m.message_id) === id);
          if (found) return ok(found);
        }
        return { response: napcatResponse(transport === 'ws' ? 1200 : 200, null, `消息${id ?? ''}不存在`) };
      }
      default:
        return { response: napcatResponse(1404, null, `不支持的api ${action}`) };
    }
  }

  private send(action: string, params: Record<string, unknown>, seq: number, transport: 'http' | 'ws'): Performed {
    const forward = FORWARD_ACTIONS.has(action);
    if (forward && !this.supportsForward) return { response: napcatResponse(1404, null, `不支持的api ${action}`) };
    const groupId = idText(params.group_id);
    const userId = idText(params.user_id);
    const messageType = action.startsWith('send_group')
      ? 'group'
      : action.startsWith('send_private')
        ? 'private'
        : params.message_type === 'group' || params.message_type === 'private'
          ? params.message_type
          : groupId !== undefined
            ? 'group'
            : 'private';
    if (messageType === 'group' && groupId === undefined) return { response: missingProperty('group_id', transport) };
    if (messageType === 'private' && userId === undefined) return { response: missingProperty('user_id', transport) };
    let segments: OneBotSegment[];
    let forwardTexts: string[] | undefined;
    if (forward) {
      if (!Array.isArray(params.messages) || params.messages.length === 0) {
        return { response: missingProperty('messages', transport) };
      }
      forwardTexts = (params.messages as { data?: { content?: unknown } }[]).map((node) =>
        renderPlainText(toSegments((node.data?.content ?? []) as OneBotMessage)),
      );
      segments = [{ type: 'forward', data: { id: `res_${seq}` } }];
    } else {
      const message = params.message;
      if (typeof message !== 'string' && !Array.isArray(message))
        return { response: missingProperty('message', transport) };
      segments = toSegments(message as OneBotMessage);
      if (segments.length === 0) {
        return {
          response: napcatResponse(
            transport === 'ws' ? 1400 : 400,
            null,
            '消息体无法解析, 请检查是否发送了不支持的消息类型',
          ),
        };
      }
    }

    const script = this.scripts.shift();
    const deliver = script === undefined || (script.kind !== 'silent' && script.delivered === true);
    let sent: FakeSentMessage | undefined;
    if (deliver) sent = this.deliver({ seq, action, messageType, groupId, userId, segments, forwardTexts });
    if (script?.kind === 'fail') {
      return {
        response: napcatResponse(
          script.retcode,
          null,
          NAPCAT_MESSAGES[script.retcode] ?? `fake failure ${script.retcode}`,
        ),
      };
    }
    if (script?.kind === 'drop') return { response: undefined };
    if (script?.kind === 'silent') return { response: napcatResponse(0, null) };
    const data = forward ? { message_id: sent!.messageId, res_id: `res_${seq}` } : { message_id: sent!.messageId };
    return { response: napcatResponse(0, data), sent: sent! };
  }

  private deliver(spec: {
    seq: number;
    action: string;
    messageType: 'group' | 'private';
    groupId: string | undefined;
    userId: string | undefined;
    segments: OneBotSegment[];
    forwardTexts: string[] | undefined;
  }): FakeSentMessage {
    const quote = spec.segments[0]?.type === 'reply' ? spec.segments[0] : undefined;
    const replyTo = quote ? idText(quote.data.id) : undefined;
    const sent: FakeSentMessage = {
      seq: spec.seq,
      action: spec.action,
      messageType: spec.messageType,
      ...(spec.messageType === 'group' ? { groupId: spec.groupId! } : { userId: spec.userId! }),
      messageId: nextMessageId(),
      segments: spec.segments,
      text: spec.forwardTexts
        ? spec.forwardTexts.join('\n')
        : renderPlainText(spec.segments.filter((s) => s.type !== 'reply')),
      ...(spec.forwardTexts && { forwardTexts: spec.forwardTexts }),
      ...(replyTo !== undefined && { replyTo }),
      receivedAt: new Date(),
    };
    this.sentMessages.push(sent);
    this.remember(
      napcatMessageSent({
        selfId: this.selfId,
        nickname: this.nickname,
        messageType: sent.messageType,
        targetId: (sent.messageType === 'group' ? sent.groupId : sent.userId) ?? '0',
        messageId: sent.messageId,
        segments: sent.segments,
      }),
    );
    for (const listener of this.sendListeners) listener(sent);
    this.waiters = this.waiters.filter((waiter) => {
      if (this.sentMessages.length < waiter.count) return true;
      waiter.resolve();
      return false;
    });
    return sent;
  }

  private reportSelf(sent: FakeSentMessage, ingressUrl: string): void {
    const event = napcatMessageSent({
      selfId: this.selfId,
      nickname: this.nickname,
      messageType: sent.messageType,
      targetId: (sent.messageType === 'group' ? sent.groupId : sent.userId) ?? '0',
      messageId: sent.messageId,
      segments: sent.segments,
    });
    const body = JSON.stringify(event);
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-self-id': this.selfId };
    if (this.options.accessToken) headers.authorization = `Bearer ${this.options.accessToken}`;
    if (this.options.secret) headers['x-signature'] = signBody(this.options.secret, body);
    const work = fetch(ingressUrl, { method: 'POST', headers, body }).then(
      async (response) => {
        if (response.status >= 300) this.reportErrors.push(`HTTP ${response.status}: ${await response.text()}`);
      },
      (error: unknown) => {
        this.reportErrors.push(error instanceof Error ? error.message : String(error));
      },
    );
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }
}

/** NapCat's schema error; over WebSocket the retcode is 1400, over HTTP 400. */
function missingProperty(name: string, transport: 'http' | 'ws'): OneBotApiResponse {
  return napcatResponse(transport === 'ws' ? 1400 : 400, null, `Key: , Message: must have required property '${name}'`);
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}
