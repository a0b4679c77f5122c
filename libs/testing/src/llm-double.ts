import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { readBody } from '@app/onebot';

/** The parts of a chat completions request body the double reads. */
export interface ChatCompletionBody {
  model?: string;
  messages?: { role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: { type: string; function?: { name: string; parameters?: { properties?: Record<string, unknown> } } }[];
  tool_choice?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body; `null` for requests without one. */
  body: ChatCompletionBody | null;
  /** The status the double answered with. */
  status: number;
  /** True when the client hung up before the answer was complete (an abort). */
  aborted: boolean;
  /** True when answered as a server-sent event stream. */
  streamed: boolean;
}

/** A scripted answer for one request. */
export type ScriptedAnswer = (
  | { kind: 'fail'; status: number; retryAfterSeconds?: number }
  | { kind: 'tool'; calls: { name: string; arguments: string }[]; content?: string | null }
  | { kind: 'content'; content: string }
  /** Never answers; the request ends only when the client gives up. */
  | { kind: 'hang' }
) & {
  /** Only requests this accepts take the answer (e.g. by model: planner vs replyer). */
  match?: (body: ChatCompletionBody) => boolean;
  /** Delay before this answer, overriding `latencyMs`. */
  latencyMs?: number;
};

export interface LlmDoubleOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Delay before every answer. Default 0. */
  latencyMs?: number;
  /** Delay between stream chunks. Default 0. */
  chunkDelayMs?: number;
  /** Text of default answers (the replyer's, or a `reply` tool call's `text`). Default `收到：<message, cut>`. */
  replyText?: (body: ChatCompletionBody) => string;
  /** Model reported by `GET /v1/models` and in answers when the request names none. */
  model?: string;
  /**
   * How long the server keeps an idle connection (Node's `keepAliveTimeout`, 5 s by default). Providers' front ends
   * keep them longer (30–120 s); set this to play one.
   */
  keepAliveMs?: number;
}

const CUT = 40;

function textOf(content: unknown): string {
  return typeof content === 'string' ? content : '';
}

/**
 * The message being answered: the replyer's prompt shows it under 【当前消息】 as `[time] name(id): text`, the
 * planner's as `[发言内容]` lines; any other prompt gives its last user turn.
 */
export function answeredText(body: ChatCompletionBody): string {
  const users = (body.messages ?? []).filter((m) => m.role === 'user').map((m) => textOf(m.content));
  for (const text of [...users].reverse()) {
    const current = /【当前消息】\n\[[^\]]*\] [^\n]*?\([0-9]+\): ([^\n]*)/.exec(text);
    if (current) return current[1]!;
  }
  for (const text of [...users].reverse()) {
    const said = /\[发言内容\]([^\n]*)/.exec(text);
    if (said) return said[1]!;
  }
  return users[users.length - 1] ?? '';
}

/** The newest `[msg_id]` of someone else the planner was shown (the message a default planner answers). */
export function newestMessageId(body: ChatCompletionBody): string | undefined {
  let found: string | undefined;
  for (const m of body.messages ?? []) {
    const text = textOf(m.content);
    // Chat messages only (they start with [时间]); the bot's own lines are marked 〔你〕.
    if (m.role !== 'user' || !text.startsWith('[时间]') || text.includes('[用户名]〔你〕')) continue;
    const match = /\[msg_id\]([^\n]+)/.exec(text);
    if (match) found = match[1]!.trim();
  }
  return found;
}

export function defaultReplyText(body: ChatCompletionBody): string {
  const chars = [...answeredText(body).replace(/\s+/g, ' ').trim()];
  return `收到：${chars.length > CUT ? `${chars.slice(0, CUT).join('')}…` : chars.join('')}`;
}

/** The tool names a request offers. */
export function offeredTools(body: ChatCompletionBody | null): string[] {
  return (body?.tools ?? []).map((t) => t.function?.name ?? '').filter((n) => n !== '');
}

/**
 * A real HTTP server speaking the OpenAI chat completions wire format: `POST /v1/chat/completions`, plain JSON or
 * a server-sent event stream (`stream: true`, with tool-call deltas and a final usage chunk when
 * `stream_options.include_usage`), and `GET /v1/models`. Scripts give tool calls (several per answer), text,
 * HTTP errors with `Retry-After`, slow answers and answers that never come; `requests` records everything it
 * was asked and which requests the client aborted. Without a script it answers like a cooperative model: a
 * planner (offered `reply` with `msg_id`) replies to the newest message, a replyer (no tools) writes `replyText`.
 */
export class LlmDouble {
  latencyMs: number;
  chunkDelayMs: number;
  replyText: (body: ChatCompletionBody) => string;
  readonly requests: RecordedRequest[] = [];
  private readonly script: ScriptedAnswer[] = [];
  private readonly model: string;
  private completions = 0;
  private readonly waiters: { count: number; resolve: () => void }[] = [];

  private readonly server: Server;
  private readonly closing = new AbortController();
  /** TCP connections clients opened to the double so far. */
  connections = 0;

  private constructor(options: LlmDoubleOptions) {
    this.latencyMs = options.latencyMs ?? 0;
    this.chunkDelayMs = options.chunkDelayMs ?? 0;
    this.replyText = options.replyText ?? defaultReplyText;
    this.model = options.model ?? 'qunli-double';
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (error as Error).message, type: 'double_error' } }));
      });
    });
    if (options.keepAliveMs !== undefined) this.server.keepAliveTimeout = options.keepAliveMs;
    this.server.on('connection', () => this.connections++);
  }

  static async start(options: LlmDoubleOptions = {}): Promise<LlmDouble> {
    const double = new LlmDouble(options);
    double.server.listen(options.port ?? 0, '127.0.0.1');
    await once(double.server, 'listening');
    return double;
  }

  /** The value for `OPENAI_BASE_URL`. */
  get baseUrl(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
  }

  /** Chat completion requests received so far. */
  get completionRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.path === '/v1/chat/completions');
  }

  /** Resolves once `count` completion requests have arrived. */
  async waitForRequests(count: number, timeoutMs = 30_000): Promise<void> {
    if (this.completionRequests.length >= count) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        new Promise<void>((resolve) => this.waiters.push({ count, resolve })),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new Error(`LLM double: ${this.completionRequests.length} of ${count} requests after ${timeoutMs} ms`),
              ),
            timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Add scripted answers, taken in order by the requests they match. */
  push(...answers: ScriptedAnswer[]): this {
    this.script.push(...answers);
    return this;
  }

  /** Scripted answers not used yet. */
  get pending(): number {
    return this.script.length;
  }

  clearScript(): this {
    this.script.length = 0;
    return this;
  }

  /** The next `n` completion requests fail with `status` (the client's retries count as requests). */
  failNext(n: number, status = 500, retryAfterSeconds?: number): this {
    for (let i = 0; i < n; i++) {
      this.script.push({ kind: 'fail', status, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) });
    }
    return this;
  }

  /** The next completion answers a `reply` call whose arguments are exactly `raw` (e.g. broken JSON). */
  nextToolArguments(raw: string, name = 'reply'): this {
    this.script.push({ kind: 'tool', calls: [{ name, arguments: raw }] });
    return this;
  }

  /** The next completion calls `name` with `args` (an object is JSON-encoded; a string is sent as is). */
  nextToolCall(name: string, args: Record<string, unknown> | string, content?: string): this {
    this.script.push({
      kind: 'tool',
      calls: [{ name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }],
      ...(content !== undefined ? { content } : {}),
    });
    return this;
  }

  /** The next completion answers with plain text and no tool call. */
  nextContent(content: string): this {
    this.script.push({ kind: 'content', content });
    return this;
  }

  async close(): Promise<void> {
    this.closing.abort();
    this.server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.server.close((error) => (error ? reject(error) : resolve())));
  }

  private take(body: ChatCompletionBody): ScriptedAnswer | undefined {
    const index = this.script.findIndex((answer) => !answer.match || answer.match(body));
    return index < 0 ? undefined : this.script.splice(index, 1)[0];
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const raw = await readBody(req);
    let body: ChatCompletionBody | null = null;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw) as ChatCompletionBody;
      } catch (error) {
        this.record(req, path, null, 400, res);
        return json(res, 400, {
          error: { message: `invalid JSON: ${(error as Error).message}`, type: 'invalid_request_error' },
        });
      }
    }

    if (req.method === 'GET' && path === '/v1/models') {
      this.record(req, path, body, 200, res);
      return json(res, 200, {
        object: 'list',
        data: [{ id: this.model, object: 'model', created: 0, owned_by: 'qunli-llm-double' }],
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      this.record(req, path, body, 404, res);
      return json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' } });
    }
    if (!body || !Array.isArray(body.messages)) {
      this.record(req, path, body, 400, res);
      return json(res, 400, { error: { message: 'messages is required', type: 'invalid_request_error' } });
    }

    const answer = this.take(body);
    const recorded = this.record(req, path, body, answer?.kind === 'fail' ? answer.status : 200, res);
    this.wake();
    const latency = answer?.latencyMs ?? this.latencyMs;
    if (answer?.kind === 'hang') {
      await this.pause(res, 24 * 3600_000);
      return;
    }
    if (latency > 0 && !(await this.pause(res, latency))) return;
    if (answer?.kind === 'fail') {
      const headers: Record<string, string> = {};
      if (answer.retryAfterSeconds !== undefined) headers['retry-after'] = String(answer.retryAfterSeconds);
      return json(
        res,
        answer.status,
        { error: { message: `scripted failure ${answer.status}`, type: 'server_error', code: null } },
        headers,
      );
    }
    this.completions += 1;
    const n = this.completions;
    const { content, calls } = this.answerFor(body, answer);
    const promptTokens = Math.ceil(JSON.stringify(body.messages).length / 4);
    const completionTokens = Math.ceil(JSON.stringify({ content, calls }).length / 4);
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    };
    const model = body.model ?? this.model;
    const finish = calls.length > 0 ? 'tool_calls' : 'stop';
    if (body.stream) {
      recorded.streamed = true;
      await this.streamAnswer(res, {
        n,
        model,
        content,
        calls,
        finish,
        usage: body.stream_options?.include_usage ? usage : null,
      });
      return;
    }
    const message: Record<string, unknown> = { role: 'assistant', content, refusal: null };
    if (calls.length > 0) {
      message.tool_calls = calls.map((call, i) => ({
        id: `call_${n}_${i}`,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }));
    }
    return json(res, 200, {
      id: `chatcmpl-double-${n}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
      usage,
    });
  }

  /** What a cooperative model would say, or what the script says. */
  private answerFor(
    body: ChatCompletionBody,
    answer: ScriptedAnswer | undefined,
  ): { content: string | null; calls: { name: string; arguments: string }[] } {
    if (answer?.kind === 'content') return { content: answer.content, calls: [] };
    if (answer?.kind === 'tool') return { content: answer.content ?? null, calls: answer.calls };
    const reply = (body.tools ?? []).find((t) => t.function?.name === 'reply');
    if (!reply) return { content: this.replyText(body), calls: [] };
    const properties = reply.function?.parameters?.properties ?? {};
    const args = 'msg_id' in properties ? { msg_id: newestMessageId(body) ?? '0' } : { text: this.replyText(body) };
    return { content: null, calls: [{ name: 'reply', arguments: JSON.stringify(args) }] };
  }

  private async streamAnswer(
    res: ServerResponse,
    answer: {
      n: number;
      model: string;
      content: string | null;
      calls: { name: string; arguments: string }[];
      finish: string;
      usage: Record<string, number> | null;
    },
  ): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const events = completionChunks({
      id: `chatcmpl-double-${answer.n}`,
      model: answer.model,
      content: answer.content,
      calls: answer.calls.map((call, index) => ({ id: `call_${answer.n}_${index}`, ...call })),
      finish: answer.finish,
      usage: answer.usage,
    });
    for (const event of events) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(event)}\n\n`);
      if (this.chunkDelayMs > 0 && !(await this.pause(res, this.chunkDelayMs))) return;
    }
    res.end('data: [DONE]\n\n');
  }

  /** Sleep `ms`; false when the client hung up (it gave up waiting) or the double is closing. */
  private async pause(res: ServerResponse, ms: number): Promise<boolean> {
    if (res.destroyed) return false;
    const hungUp = new AbortController();
    const onClose = () => hungUp.abort();
    res.once('close', onClose);
    try {
      await delay(ms, undefined, { signal: AbortSignal.any([hungUp.signal, this.closing.signal]) });
      return true;
    } catch (error) {
      if ((error as Error).name === 'AbortError') return false;
      throw error;
    } finally {
      res.off('close', onClose);
    }
  }

  private record(
    req: IncomingMessage,
    path: string,
    body: ChatCompletionBody | null,
    status: number,
    res: ServerResponse,
  ): RecordedRequest {
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path,
      headers: req.headers,
      body,
      status,
      aborted: false,
      streamed: false,
    };
    res.once('close', () => {
      if (!res.writableFinished) recorded.aborted = true;
    });
    this.requests.push(recorded);
    return recorded;
  }

  private wake(): void {
    const count = this.completionRequests.length;
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (count >= this.waiters[i]!.count) this.waiters.splice(i, 1)[0]!.resolve();
    }
  }
}

/**
 * A chat completion as the server-sent events a provider streams: the role, the content in pieces, each tool call's
 * name and then its arguments in pieces, the finish reason, and the usage when the request asked for it.
 */
export function completionChunks(answer: {
  id: string;
  model: string;
  content: string | null;
  calls: { id: string; name: string; arguments: string }[];
  finish: string;
  usage: Record<string, number> | null;
}): unknown[] {
  const base = { id: answer.id, object: 'chat.completion.chunk', created: 0, model: answer.model };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const events: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(answer.content ?? '', 8)) events.push(chunk({ content: piece }));
  answer.calls.forEach((call, index) => {
    events.push(
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    );
    for (const piece of pieces(call.arguments, 16)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, answer.finish));
  if (answer.usage) events.push({ ...base, choices: [], usage: answer.usage });
  return events;
}

function pieces(text: string, size: number): string[] {
  const chars = [...text];
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
