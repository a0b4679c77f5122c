import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '@app/onebot';
import { FakeOneBot, napcatGroupMessage, type FakeSentMessage } from '@app/testing';
import { SIMULATOR_PAGE } from './page.js';

export interface SimulatorOptions {
  port: number;
  host: string;
  /** Where ingress takes OneBot HTTP POST reports (`…/onebot/v11/http`). */
  ingressUrl: string;
  selfId: string;
  nickname: string;
  accessToken?: string;
  secret?: string;
  /** Group ids offered in the page before anyone speaks. */
  groups?: string[];
  /** Also report the bot's own messages to ingress as `message_sent`, like NapCat's reportSelfMessage. */
  reportSelfMessages?: boolean;
}

/** One line of the conversation as the page shows it. */
export interface FeedEntry {
  seq: number;
  kind: 'user' | 'bot' | 'error' | 'system';
  at: string;
  text: string;
  groupId?: string;
  userId?: string;
  nickname?: string;
  messageId?: number;
  replyTo?: string;
}

export interface RunningSimulator {
  url: string;
  fake: FakeOneBot;
  feed: readonly FeedEntry[];
  stop(): Promise<void>;
}

const HISTORY = 2000;
const MAX_TEXT = 4000;

/**
 * The chat simulator: one HTTP server that is both a OneBot v11 implementation for the stack (outbound's
 * `ONEBOT_HTTP_API_URL` points here; `send_group_msg` lands in the conversation) and a small chat page where a
 * person types as any user in any group. What they type goes to ingress exactly as NapCat would post it: a
 * NapCat-shaped event, Bearer token and `X-Signature` when configured.
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
  let seq = 0;

  function push(entry: Omit<FeedEntry, 'seq' | 'at'>): FeedEntry {
    const full: FeedEntry = { seq: ++seq, at: new Date().toISOString(), ...entry };
    feed.push(full);
    if (feed.length > HISTORY) feed.splice(0, feed.length - HISTORY);
    const frame = `id: ${full.seq}\ndata: ${JSON.stringify(full)}\n\n`;
    for (const res of listeners) res.write(frame);
    return full;
  }

  fake.onSend((sent: FakeSentMessage) => {
    push({
      kind: 'bot',
      text: sent.text,
      messageId: sent.messageId,
      ...(sent.groupId !== undefined && { groupId: sent.groupId }),
      ...(sent.userId !== undefined && { userId: sent.userId }),
      ...(sent.replyTo !== undefined && { replyTo: sent.replyTo }),
    });
  });

  async function say(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(await readBody(req)) as Record<string, unknown>;
    } catch {
      return json(res, 400, { message: '请求不是 JSON · body is not JSON' });
    }
    const problems: string[] = [];
    const groupId = idText(body.groupId);
    const userId = idText(body.userId);
    const nickname = typeof body.nickname === 'string' ? body.nickname.trim() : '';
    const text = typeof body.text === 'string' ? body.text : '';
    if (!/^[1-9][0-9]{0,11}$/.test(groupId)) problems.push('群号必须是数字 · groupId must be a number');
    if (!/^[1-9][0-9]{0,11}$/.test(userId)) problems.push('QQ 号必须是数字 · userId must be a number');
    if (userId === options.selfId) problems.push('不能冒充机器人 · userId is the bot itself');
    if (nickname.length === 0) problems.push('昵称不能为空 · nickname is empty');
    if (text.trim().length === 0 || text.length > MAX_TEXT)
      problems.push(`消息为空或过长 · text empty or over ${MAX_TEXT}`);
    if (problems.length > 0) return json(res, 400, { message: problems.join('; '), problems });

    const atSelf = body.atSelf === true;
    const event = napcatGroupMessage({ selfId: options.selfId, groupId, userId, nickname, text, atSelf });
    const messageId = event.message_id as number;
    // Shown before the POST, so what the person typed stays visible even when ingress is down.
    push({ kind: 'user', groupId, userId, nickname, messageId, text: atSelf ? `@${options.nickname} ${text}` : text });
    try {
      const result = await fake.postEvent(options.ingressUrl, event);
      if (result.status >= 300) {
        push({
          kind: 'error',
          groupId,
          text: `ingress 拒绝了这条消息 · rejected: HTTP ${result.status} ${result.body.slice(0, 300)}`,
        });
      }
      return json(res, result.status < 300 ? 200 : 502, {
        ingressStatus: result.status,
        messageId,
        ingressBody: result.body,
      });
    } catch (error) {
      const reason =
        error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      push({ kind: 'error', groupId, text: `连不上 ingress · cannot reach ${options.ingressUrl}: ${reason}` });
      return json(res, 502, { message: `cannot reach ingress at ${options.ingressUrl}: ${reason}` });
    }
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
      });
    }
    if (req.method === 'GET' && path === '/sim/feed') return subscribe(req, res);
    if (req.method === 'POST' && path === '/sim/say') return say(req, res);
    if (path.startsWith('/sim/') || path === '/favicon.ico') return json(res, 404, { message: `no route ${path}` });
    // Everything else is the OneBot v11 HTTP API (POST /send_group_msg …).
    return fake.handleRequest(req, res);
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { message: error instanceof Error ? error.message : String(error) });
    });
  });
  const heartbeat = setInterval(() => {
    for (const res of listeners) res.write(': keep-alive\n\n');
  }, 15_000);
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
  push({ kind: 'system', text: `模拟器已启动 · simulator up; bot ${options.selfId}, ingress ${options.ingressUrl}` });

  return {
    url: `http://${host}:${address.port}`,
    fake,
    feed,
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

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** Ids from the page arrive as strings or numbers; anything else is not an id. */
function idText(value: unknown): string {
  return typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '';
}
