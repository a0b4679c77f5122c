import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { readBody } from '@app/onebot';
import {
  FakeOneBot,
  napcatGroupMessage,
  napcatPoke,
  napcatPrivateMessage,
  napcatRecall,
  type FakeSentMessage,
} from '@app/testing';
import { SIMULATOR_PAGE } from './page.js';

export interface SimulatorOptions {
  port: number;
  host: string;
  /** Where ingress takes OneBot HTTP POST reports (`…/onebot/v11/http`). */
  ingressUrl: string;
  selfId: string;
  /** The bot's name as people see it: the persona's name. */
  nickname: string;
  accessToken?: string;
  secret?: string;
  /** Group ids offered in the page before anyone speaks. */
  groups?: string[];
  /** Also report the bot's own messages to ingress as `message_sent`, like NapCat's reportSelfMessage. */
  reportSelfMessages?: boolean;
  /** No LLM key is set: the bot answers through the offline responder (the page shows a badge). */
  offline?: boolean;
  /** The conversation so far, read from the stack's log (so a restart keeps the transcript). */
  transcript?: FeedEntry[];
}

/** One line of the conversation as the page shows it. */
export interface FeedEntry {
  seq: number;
  kind: 'user' | 'bot' | 'error' | 'system' | 'poke' | 'recall';
  at: string;
  text: string;
  groupId?: string;
  userId?: string;
  nickname?: string;
  messageId?: number | string;
  replyTo?: string;
  /** Set on a message that was withdrawn. */
  recalled?: boolean;
  /** A forward message (合并转发) and the lines it holds. */
  forward?: string[];
  /** What the scheduler decided about a person's message, and why (from the projections). */
  decision?: DecisionNote['decision'];
}

/** The scheduler's latest decision about one message, shown under it. */
export interface DecisionNote {
  /** `g:<group>` or `p:<user>`. */
  conversation: string;
  messageId: string;
  decision: { outcome: string; reason: string };
}

/** Whether the bot is thinking in a conversation (an episode runs): `g:<group>` or `p:<user>`. */
export interface ThinkingStatus {
  conversation: string;
  thinking: boolean;
}

export interface RunningSimulator {
  url: string;
  fake: FakeOneBot;
  feed: readonly FeedEntry[];
  /** Tell the page the bot started or stopped thinking somewhere. */
  setThinking(status: ThinkingStatus): void;
  /** Show a decision and its reason under the message it is about. */
  setDecision(note: DecisionNote): void;
  stop(): Promise<void>;
}

const HISTORY = 2000;
const MAX_TEXT = 4000;
const ID = /^[1-9][0-9]{0,11}$/;

type Say = { groupId?: string; userId: string; nickname: string; text: string; atSelf: boolean; replyTo?: string };

/**
 * The chat simulator: one HTTP server that is both a OneBot v11 implementation for the stack (outbound's
 * `ONEBOT_HTTP_API_URL` points here; sends land in the conversation; history and forward actions work) and a chat
 * page where a person tries every trigger through the same OneBot path a real QQ connection uses: group and
 * private messages, @ the bot or call its name, quote its messages, poke it, recall a message, send a forward,
 * speak as a second user. Reports go to ingress exactly as NapCat posts them (Bearer token, `X-Signature`).
 */
export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const fake = new FakeOneBot({
    selfId: options.selfId,
    nickname: options.nickname,
    ...(options.accessToken !== undefined && { accessToken: options.accessToken }),
    ...(options.secret !== undefined && { secret: options.secret }),
    ...(options.reportSelfMessages === true && { reportSelfMessagesTo: options.ingressUrl }),
  });
  const feed: FeedEntry[] = [];
  const listeners = new Set<ServerResponse>();
  const thinking = new Map<string, boolean>();
  let seq = 0;

  function broadcast(frame: string): void {
    for (const res of listeners) res.write(frame);
  }

  function push(entry: Omit<FeedEntry, 'seq' | 'at'> & { at?: string }): FeedEntry {
    const full: FeedEntry = { seq: ++seq, at: entry.at ?? new Date().toISOString(), ...entry };
    feed.push(full);
    if (feed.length > HISTORY) feed.splice(0, feed.length - HISTORY);
    broadcast(`id: ${full.seq}\ndata: ${JSON.stringify(full)}\n\n`);
    return full;
  }

  for (const entry of options.transcript ?? []) {
    const { seq: _seq, ...rest } = entry;
    push(rest);
    // The simulator's own history (what verification of unknown sends reads) starts with the transcript too.
    if (entry.kind === 'bot' || entry.kind === 'user') rememberInFake(fake, options.selfId, entry);
  }
  if ((options.transcript ?? []).length > 0)
    push({ kind: 'system', text: '以上是重启前的聊天记录 · transcript from the log' });

  fake.onSend((sent: FakeSentMessage) => {
    push({
      kind: 'bot',
      text: sent.text,
      messageId: sent.messageId,
      ...(sent.groupId !== undefined && { groupId: sent.groupId }),
      ...(sent.userId !== undefined && { userId: sent.userId }),
      ...(sent.replyTo !== undefined && { replyTo: sent.replyTo }),
      ...(sent.forwardTexts !== undefined && { forward: sent.forwardTexts }),
    });
  });

  async function report(
    event: Record<string, unknown>,
    groupId: string | undefined,
    res: ServerResponse,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    try {
      const result = await fake.postEvent(options.ingressUrl, event);
      if (result.status >= 300) {
        push({
          kind: 'error',
          ...(groupId !== undefined && { groupId }),
          text: `ingress 拒绝了这条消息 · rejected: HTTP ${result.status} ${result.body.slice(0, 300)}`,
        });
      }
      return json(res, result.status < 300 ? 200 : 502, {
        ingressStatus: result.status,
        ingressBody: result.body,
        ...extra,
      });
    } catch (error) {
      const reason =
        error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      push({
        kind: 'error',
        ...(groupId !== undefined && { groupId }),
        text: `连不上 ingress · cannot reach ${options.ingressUrl}: ${reason}`,
      });
      return json(res, 502, { message: `cannot reach ingress at ${options.ingressUrl}: ${reason}` });
    }
  }

  async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
    try {
      const body: unknown = JSON.parse(await readBody(req));
      return typeof body === 'object' && body !== null && !Array.isArray(body)
        ? (body as Record<string, unknown>)
        : undefined;
    } catch {
      return undefined;
    }
  }

  function readSay(body: Record<string, unknown>, problems: string[], requireText = true): Say {
    const groupId = idText(body.groupId);
    const userId = idText(body.userId);
    const nickname = typeof body.nickname === 'string' ? body.nickname.trim() : '';
    const text = typeof body.text === 'string' ? body.text : '';
    if (groupId !== '' && !ID.test(groupId)) problems.push('群号必须是数字 · groupId must be a number');
    if (!ID.test(userId)) problems.push('QQ 号必须是数字 · userId must be a number');
    if (userId === options.selfId) problems.push('不能冒充机器人 · userId is the bot itself');
    if (nickname.length === 0) problems.push('昵称不能为空 · nickname is empty');
    if (requireText && (text.trim().length === 0 || text.length > MAX_TEXT)) {
      problems.push(`消息为空或过长 · text empty or over ${MAX_TEXT}`);
    }
    const replyTo = idText(body.replyTo);
    return {
      ...(groupId !== '' && { groupId }),
      userId,
      nickname,
      text,
      atSelf: body.atSelf === true,
      ...(/^-?[0-9]{1,12}$/.test(replyTo) && { replyTo }),
    };
  }

  /** The author of a quoted message, for the automatic @ the QQ client adds after a quote. */
  function authorOf(messageId: string): string | undefined {
    const entry = feed.find((e) => String(e.messageId) === messageId);
    if (!entry) return undefined;
    return entry.kind === 'bot' ? options.selfId : entry.userId;
  }

  async function say(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    if (!body) return json(res, 400, { message: '请求不是 JSON · body is not JSON' });
    const problems: string[] = [];
    const spec = readSay(body, problems);
    const lines = Array.isArray(body.forward)
      ? body.forward.filter((l): l is string => typeof l === 'string' && l.trim() !== '')
      : undefined;
    if (lines !== undefined && (lines.length === 0 || spec.groupId === undefined))
      problems.push('转发需要至少一行，且只在群里 · a forward needs lines, in a group');
    if (problems.length > 0) return json(res, 400, { message: problems.join('; '), problems });

    let event: Record<string, unknown>;
    let shown = spec.atSelf ? `@${options.nickname} ${spec.text}` : spec.text;
    if (spec.groupId === undefined) {
      event = napcatPrivateMessage({
        selfId: options.selfId,
        userId: spec.userId,
        nickname: spec.nickname,
        text: spec.text,
        ...(spec.replyTo !== undefined && { replyTo: spec.replyTo }),
      });
    } else if (lines !== undefined) {
      const id = `${Date.now()}${Math.floor(Math.random() * 1000)}`;
      event = napcatGroupMessage({
        selfId: options.selfId,
        groupId: spec.groupId,
        userId: spec.userId,
        nickname: spec.nickname,
        text: '[转发消息]',
        segments: [{ type: 'forward', data: { id } }],
      });
      shown = '[转发消息]';
    } else {
      const quoted = spec.replyTo === undefined ? undefined : authorOf(spec.replyTo);
      event = napcatGroupMessage({
        selfId: options.selfId,
        groupId: spec.groupId,
        userId: spec.userId,
        nickname: spec.nickname,
        text: spec.text,
        atSelf: spec.atSelf,
        ...(spec.replyTo !== undefined && { replyTo: spec.replyTo }),
        ...(quoted !== undefined && { quotedUserId: quoted }),
      });
    }
    const messageId = event.message_id as number;
    // Shown before the POST, so what the person typed stays visible even when ingress is down.
    push({
      kind: 'user',
      ...(spec.groupId !== undefined ? { groupId: spec.groupId } : {}),
      userId: spec.userId,
      nickname: spec.nickname,
      messageId,
      text: shown,
      ...(spec.replyTo !== undefined && { replyTo: spec.replyTo }),
      ...(lines !== undefined && { forward: lines }),
    });
    return report(event, spec.groupId, res, { messageId });
  }

  async function poke(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    if (!body) return json(res, 400, { message: '请求不是 JSON · body is not JSON' });
    const problems: string[] = [];
    const spec = readSay(body, problems, false);
    if (problems.length > 0) return json(res, 400, { message: problems.join('; '), problems });
    const event = napcatPoke({
      selfId: options.selfId,
      userId: spec.userId,
      targetId: options.selfId,
      ...(spec.groupId !== undefined && { groupId: spec.groupId }),
    });
    push({
      kind: 'poke',
      ...(spec.groupId !== undefined && { groupId: spec.groupId }),
      userId: spec.userId,
      nickname: spec.nickname,
      text: `${spec.nickname} 戳了戳 ${options.nickname}`,
    });
    return report(event, spec.groupId, res);
  }

  async function recall(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const messageId = idText(body?.messageId);
    const entry = feed.find((e) => e.kind === 'user' && String(e.messageId) === messageId && !e.recalled);
    if (!entry || entry.userId === undefined)
      return json(res, 400, { message: '只能撤回自己发的消息 · only a person’s own message can be recalled' });
    entry.recalled = true;
    const event = napcatRecall({
      selfId: options.selfId,
      messageId,
      userId: entry.userId,
      ...(entry.groupId !== undefined && { groupId: entry.groupId }),
    });
    push({
      kind: 'recall',
      ...(entry.groupId !== undefined ? { groupId: entry.groupId } : { userId: entry.userId }),
      messageId,
      nickname: entry.nickname ?? entry.userId,
      text: `${entry.nickname ?? entry.userId} 撤回了一条消息`,
    });
    return report(event, entry.groupId, res);
  }

  function subscribe(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    // A reconnecting page gets the whole history again, so it clears what it had first.
    res.write(`retry: 1000\nevent: reset\ndata: {}\n\n`);
    for (const entry of feed) res.write(`id: ${entry.seq}\ndata: ${JSON.stringify(entry)}\n\n`);
    for (const [conversation, on] of thinking)
      if (on) res.write(`event: thinking\ndata: ${JSON.stringify({ conversation, thinking: on })}\n\n`);
    listeners.add(res);
    req.on('close', () => listeners.delete(res));
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://simulator').pathname;
    if (req.method === 'GET' && (path === '/' || path === '/index.html')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' });
      res.end(SIMULATOR_PAGE);
      return;
    }
    if (req.method === 'GET' && path === '/sim/config') {
      return json(res, 200, {
        selfId: options.selfId,
        nickname: options.nickname,
        ingressUrl: options.ingressUrl,
        groups: options.groups ?? [],
        signed: options.secret !== undefined,
        offline: options.offline === true,
      });
    }
    if (req.method === 'GET' && path === '/sim/feed') return subscribe(req, res);
    if (req.method === 'POST' && path === '/sim/say') return say(req, res);
    if (req.method === 'POST' && path === '/sim/poke') return poke(req, res);
    if (req.method === 'POST' && path === '/sim/recall') return recall(req, res);
    if (path.startsWith('/sim/') || path === '/favicon.ico') return json(res, 404, { message: `no route ${path}` });
    // Everything else is the OneBot v11 HTTP API (POST /send_group_msg …).
    return fake.handleRequest(req, res);
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { message: error instanceof Error ? error.message : String(error) });
    });
  });
  // The forward WebSocket of the implementation, on the same port (ONEBOT_WS_URL=ws://…:8090).
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => fake.upgrade(req, socket, head));
  const heartbeat = setInterval(() => broadcast(': keep-alive\n\n'), 15_000);
  heartbeat.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  push({
    kind: 'system',
    text: `模拟器已启动 · simulator up; bot ${options.nickname} (${options.selfId}), ingress ${options.ingressUrl}${options.offline ? '; 离线模式 offline responder' : ''}`,
  });

  return {
    url: `http://${host}:${address.port}`,
    fake,
    feed,
    setDecision(note: DecisionNote) {
      const entry = feed.find(
        (e) =>
          e.kind === 'user' &&
          String(e.messageId) === note.messageId &&
          (e.groupId !== undefined ? `g:${e.groupId}` : `p:${e.userId ?? ''}`) === note.conversation,
      );
      if (entry) entry.decision = note.decision;
      broadcast(`event: decision\ndata: ${JSON.stringify(note)}\n\n`);
    },
    setThinking(status: ThinkingStatus) {
      if ((thinking.get(status.conversation) ?? false) === status.thinking) return;
      thinking.set(status.conversation, status.thinking);
      broadcast(`event: thinking\ndata: ${JSON.stringify(status)}\n\n`);
    },
    async stop() {
      clearInterval(heartbeat);
      for (const res of listeners) res.end();
      listeners.clear();
      await fake.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Put a transcript line into the fake's conversation history, shaped as the implementation would report it. */
function rememberInFake(fake: FakeOneBot, selfId: string, entry: FeedEntry): void {
  const messageId = Number(entry.messageId);
  if (!Number.isSafeInteger(messageId)) return;
  const time = Math.floor(Date.parse(entry.at) / 1000);
  const userId = entry.kind === 'bot' ? selfId : (entry.userId ?? '0');
  const base =
    entry.groupId !== undefined
      ? napcatGroupMessage({
          selfId,
          groupId: entry.groupId,
          userId,
          nickname: entry.nickname ?? userId,
          text: entry.text,
          messageId,
          time,
        })
      : napcatPrivateMessage({
          selfId,
          userId: entry.userId ?? '0',
          nickname: entry.nickname ?? userId,
          text: entry.text,
          messageId,
          time,
        });
  fake.remember(entry.kind === 'bot' ? { ...base, post_type: 'message_sent', user_id: Number(selfId) } : base);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** Ids from the page arrive as strings or numbers; anything else is not an id. */
function idText(value: unknown): string {
  return typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '';
}
