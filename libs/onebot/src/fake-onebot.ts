import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { renderPlainText, toSegments } from './cq-code.js';
import { napcatGroupMessage, napcatMessageSent, nextMessageId, type GroupMessageSpec } from './napcat-events.js';
import type { OneBotApiResponse, OneBotMessage, OneBotSegment } from './onebot-types.js';
import { readBody } from './http-body.js';
import { signBody } from './signature.js';

export interface FakeOneBotOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** When set, API calls must carry `Authorization: Bearer <token>` (or `?access_token=`), and posted events carry it. */
  accessToken?: string;
  /** When set, posted events are signed with `X-Signature: sha1=<HMAC-SHA1(body)>`. */
  secret?: string;
  /** The bot's QQ number (`self_id`). */
  selfId?: string;
  nickname?: string;
  /** Delay before every API response. */
  latencyMs?: number;
  /** Report the bot's own sent messages to this ingress URL as `post_type: message_sent` (NapCat reportSelfMessage). */
  reportSelfMessagesTo?: string;
}

/** One API request as the fake received it, in arrival order. */
export interface FakeOneBotCall {
  seq: number;
  action: string;
  params: Record<string, unknown>;
  authorized: boolean;
  receivedAt: Date;
  /** Set once the response was written. */
  response?: OneBotApiResponse;
}

/** A message the fake accepted for delivery (recorded when received, even while its response is held). */
export interface FakeSentMessage {
  seq: number;
  action: string;
  messageType: 'group' | 'private';
  groupId?: string;
  userId?: string;
  messageId: number;
  segments: OneBotSegment[];
  /** Plain text of the message without the quote (`@name` for mentions). */
  text: string;
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

const SEND_ACTIONS = new Set(['send_group_msg', 'send_private_msg', 'send_msg']);

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
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) return value;
  return undefined;
}

/**
 * A real HTTP server that behaves like a NapCat OneBot v11 implementation: the HTTP API side (send_group_msg …,
 * NapCat-shaped responses, Bearer token check) and the event side (`postGroupMessage` builds and signs a NapCat
 * event and POSTs it to an ingress). Tests steer it: hold responses to simulate a crash mid-send, fail the next
 * sends with a retcode, add latency, wait for sends.
 */
export class FakeOneBot {
  readonly calls: FakeOneBotCall[] = [];
  readonly sentMessages: FakeSentMessage[] = [];
  latencyMs: number;
  selfId: string;
  nickname: string;
  /** Errors met while reporting self messages (the ingress was down, refused them …). */
  readonly reportErrors: string[] = [];

  private server: Server | undefined;
  private holding = false;
  private held: (() => void)[] = [];
  private failures: number[] = [];
  private seq = 0;
  private readonly sendListeners = new Set<(message: FakeSentMessage) => void>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private waiters: { count: number; resolve: () => void }[] = [];

  constructor(private readonly options: FakeOneBotOptions = {}) {
    this.latencyMs = options.latencyMs ?? 0;
    this.selfId = options.selfId ?? '10001';
    this.nickname = options.nickname ?? '机器人';
  }

  /** Start listening; resolves to the base URL (`http://127.0.0.1:<port>`), the value for ONEBOT_HTTP_API_URL. */
  async start(): Promise<string> {
    const server = createServer((req, res) => {
      void this.handleRequest(req, res);
    });
    // Clients keep connections alive; a short idle timeout keeps stop() quick and mirrors NapCat's express server.
    server.keepAliveTimeout = 5000;
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

  get port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? 0;
  }

  async stop(): Promise<void> {
    this.releaseSends();
    await Promise.allSettled([...this.inFlight]);
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Forget every recorded call and pending failure (the server keeps running). */
  reset(): void {
    this.calls.length = 0;
    this.sentMessages.length = 0;
    this.failures = [];
    this.reportErrors.length = 0;
  }

  /** Keep accepting sends (recorded as received) but hold every send response until `releaseSends()`. */
  holdSends(): void {
    this.holding = true;
  }

  releaseSends(): void {
    this.holding = false;
    const held = this.held;
    this.held = [];
    for (const release of held) release();
  }

  /** Number of send responses currently held back. */
  get heldSends(): number {
    return this.held.length;
  }

  /** Answer the next `n` send calls with `retcode` (NapCat-shaped; the message is not delivered). */
  failNext(n: number, retcode: number): void {
    for (let i = 0; i < n; i++) this.failures.push(retcode);
  }

  /** Resolves once `n` messages in total were accepted; rejects after `timeoutMs` naming what arrived. */
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

  /** Called for every accepted message, as it is received. Returns the unsubscribe function. */
  onSend(listener: (message: FakeSentMessage) => void): () => void {
    this.sendListeners.add(listener);
    return () => this.sendListeners.delete(listener);
  }

  /** POST one event to an ingress as an implementation's HTTP POST reporter does (token, signature, X-Self-ID). */
  async postEvent(ingressUrl: string, event: Record<string, unknown>): Promise<PostResult> {
    const body = JSON.stringify(event);
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

  /** The request listener; exposed so a host server (the chat simulator) can mount the API next to its own routes. */
  async handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const work = this.answer(req, res).catch((error: unknown) => {
      // The client went away mid-request (a killed outbound); nothing to answer, but keep serving others.
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

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    const authorized = this.authorized(req, url);
    const call: FakeOneBotCall = { seq: ++this.seq, action, params, authorized, receivedAt: new Date() };
    this.calls.push(call);

    if (!authorized) {
      const missing = !req.headers.authorization && !url.searchParams.has('access_token');
      call.response = napcatResponse(missing ? 401 : 403, null, 'token verify failed');
      reply(res, missing ? 401 : 403, call.response);
      return;
    }

    const { response, sent } = this.perform(action, params, call.seq);
    if (sent && this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
    if (this.latencyMs > 0) await delay(this.latencyMs);
    call.response = response;
    reply(res, 200, response);
    if (sent && this.options.reportSelfMessagesTo) this.reportSelf(sent, this.options.reportSelfMessagesTo);
  }

  private authorized(req: IncomingMessage, url: URL): boolean {
    const token = this.options.accessToken;
    if (!token) return true;
    const header = req.headers.authorization;
    if (header !== undefined) return header.trim() === `Bearer ${token}` || header.trim() === `Token ${token}`;
    return url.searchParams.get('access_token') === token;
  }

  private perform(
    action: string,
    params: Record<string, unknown>,
    seq: number,
  ): { response: OneBotApiResponse; sent?: FakeSentMessage } {
    if (SEND_ACTIONS.has(action)) return this.send(action, params, seq);
    switch (action) {
      case 'get_login_info':
        return { response: napcatResponse(0, { user_id: Number(this.selfId), nickname: this.nickname }) };
      case 'get_group_info': {
        const groupId = idText(params.group_id);
        if (groupId === undefined) return { response: missingProperty('group_id') };
        return {
          response: napcatResponse(0, {
            group_id: Number(groupId),
            group_name: `测试群 ${groupId}`,
            group_remark: '',
            member_count: 42,
            max_member_count: 500,
          }),
        };
      }
      case 'get_status':
        return { response: napcatResponse(0, { online: true, good: true, stat: {} }) };
      case 'get_version_info':
        return {
          response: napcatResponse(0, { app_name: 'NapCat.Onebot', protocol_version: 'v11', app_version: 'fake' }),
        };
      default:
        return { response: napcatResponse(1404, null, `不支持的api ${action}`) };
    }
  }

  private send(
    action: string,
    params: Record<string, unknown>,
    seq: number,
  ): { response: OneBotApiResponse; sent?: FakeSentMessage } {
    const groupId = idText(params.group_id);
    const userId = idText(params.user_id);
    const messageType =
      action === 'send_group_msg'
        ? 'group'
        : action === 'send_private_msg'
          ? 'private'
          : params.message_type === 'group' || params.message_type === 'private'
            ? params.message_type
            : groupId !== undefined
              ? 'group'
              : 'private';
    if (messageType === 'group' && groupId === undefined) return { response: missingProperty('group_id') };
    if (messageType === 'private' && userId === undefined) return { response: missingProperty('user_id') };
    const message = params.message;
    if (typeof message !== 'string' && !Array.isArray(message)) return { response: missingProperty('message') };
    const segments = toSegments(message as OneBotMessage);
    if (segments.length === 0)
      return { response: napcatResponse(400, null, '消息体无法解析, 请检查是否发送了不支持的消息类型') };

    const failure = this.failures.shift();
    if (failure !== undefined) {
      return { response: napcatResponse(failure, null, NAPCAT_MESSAGES[failure] ?? `fake failure ${failure}`) };
    }
    const quote = segments[0]?.type === 'reply' ? segments[0] : undefined;
    const replyTo = quote ? idText(quote.data.id) : undefined;
    const sent: FakeSentMessage = {
      seq,
      action,
      messageType,
      ...(messageType === 'group' ? { groupId: groupId! } : { userId: userId! }),
      messageId: nextMessageId(),
      segments,
      text: renderPlainText(segments.filter((s) => s.type !== 'reply')),
      ...(replyTo !== undefined && { replyTo }),
      receivedAt: new Date(),
    };
    this.sentMessages.push(sent);
    for (const listener of this.sendListeners) listener(sent);
    this.waiters = this.waiters.filter((waiter) => {
      if (this.sentMessages.length < waiter.count) return true;
      waiter.resolve();
      return false;
    });
    return { response: napcatResponse(0, { message_id: sent.messageId }), sent };
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
    const work = this.postEvent(ingressUrl, event).then(
      (result) => {
        if (result.status >= 300) this.reportErrors.push(`HTTP ${result.status}: ${result.body}`);
      },
      (error: unknown) => {
        this.reportErrors.push(error instanceof Error ? error.message : String(error));
      },
    );
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }
}

function missingProperty(name: string): OneBotApiResponse {
  return napcatResponse(400, null, `Key: , Message: must have required property '${name}'`);
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}
