import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { readBody } from '@app/onebot';

/** The parts of a chat completions request body the double reads. */
export interface ChatCompletionBody {
  model?: string;
  messages?: { role: string; content?: unknown }[];
  tools?: { type: string; function?: { name: string } }[];
  tool_choice?: unknown;
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
}

/** A scripted answer for one request. */
export type ScriptedAnswer =
  | { kind: 'fail'; status: number }
  | { kind: 'tool'; name: string; arguments: string; content?: string | null }
  | { kind: 'content'; content: string };

export interface LlmDoubleOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Delay before every answer. Default 0. */
  latencyMs?: number;
  /** The text of the default `reply` tool call. Default: `收到：<the message being answered, cut>`. */
  replyText?: (body: ChatCompletionBody) => string;
  /** Model reported by `GET /v1/models` and in answers when the request names none. */
  model?: string;
}

const CUT = 40;

/** The message being answered: qunli's prompt shows it under 【当前消息】; any other prompt gives its last user turn. */
export function answeredText(body: ChatCompletionBody): string {
  const users = (body.messages ?? []).filter((m) => m.role === 'user' && typeof m.content === 'string');
  const last = (users[users.length - 1]?.content as string | undefined) ?? '';
  const current = /【当前消息】\n\[[^\]]*\] [^\n]*?\([0-9]+\): ([^\n]*)/.exec(last);
  return current?.[1] ?? last;
}

export function defaultReplyText(body: ChatCompletionBody): string {
  const chars = [...answeredText(body).replace(/\s+/g, ' ').trim()];
  return `收到：${chars.length > CUT ? `${chars.slice(0, CUT).join('')}…` : chars.join('')}`;
}

/**
 * A real HTTP server that speaks enough of the OpenAI chat completions API for qunli: `POST /v1/chat/completions`
 * (non-streaming; answers with a `reply` tool call) and `GET /v1/models`. Knobs script failures and malformed
 * answers; `requests` records everything it was asked. Used by e2e tests and benchmarks.
 */
export class LlmDouble {
  latencyMs: number;
  replyText: (body: ChatCompletionBody) => string;
  readonly requests: RecordedRequest[] = [];
  private readonly script: ScriptedAnswer[] = [];
  private readonly model: string;
  private completions = 0;

  private readonly server: Server;
  private readonly closing = new AbortController();

  private constructor(options: LlmDoubleOptions) {
    this.latencyMs = options.latencyMs ?? 0;
    this.replyText = options.replyText ?? defaultReplyText;
    this.model = options.model ?? 'qunli-double';
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (error as Error).message, type: 'double_error' } }));
      });
    });
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

  /** The next `n` completion requests fail with `status` (the client's retries count as requests). */
  failNext(n: number, status = 500): this {
    for (let i = 0; i < n; i++) this.script.push({ kind: 'fail', status });
    return this;
  }

  /** The next completion answers a `reply` call whose arguments are exactly `raw` (e.g. broken JSON). */
  nextToolArguments(raw: string): this {
    this.script.push({ kind: 'tool', name: 'reply', arguments: raw });
    return this;
  }

  /** The next completion calls `name` with `args` (an object is JSON-encoded; a string is sent as is). */
  nextToolCall(name: string, args: Record<string, unknown> | string): this {
    this.script.push({ kind: 'tool', name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });
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

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const raw = await readBody(req);
    let body: ChatCompletionBody | null = null;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw) as ChatCompletionBody;
      } catch (error) {
        this.record(req, path, null, 400);
        return json(res, 400, {
          error: { message: `invalid JSON: ${(error as Error).message}`, type: 'invalid_request_error' },
        });
      }
    }

    if (req.method === 'GET' && path === '/v1/models') {
      this.record(req, path, body, 200);
      return json(res, 200, {
        object: 'list',
        data: [{ id: this.model, object: 'model', created: 0, owned_by: 'qunli-llm-double' }],
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      this.record(req, path, body, 404);
      return json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' } });
    }
    if (!body || !Array.isArray(body.messages)) {
      this.record(req, path, body, 400);
      return json(res, 400, { error: { message: 'messages is required', type: 'invalid_request_error' } });
    }

    const answer = this.script.shift();
    this.record(req, path, body, answer?.kind === 'fail' ? answer.status : 200);
    if (this.latencyMs > 0 && !(await this.wait(res))) return;
    if (answer?.kind === 'fail') {
      return json(res, answer.status, {
        error: { message: `scripted failure ${answer.status}`, type: 'server_error', code: null },
      });
    }
    this.completions += 1;
    const message =
      answer?.kind === 'content'
        ? { role: 'assistant', content: answer.content, refusal: null }
        : {
            role: 'assistant',
            content: answer?.kind === 'tool' ? (answer.content ?? null) : null,
            refusal: null,
            tool_calls: [
              {
                id: `call_${this.completions}`,
                type: 'function',
                function:
                  answer?.kind === 'tool'
                    ? { name: answer.name, arguments: answer.arguments }
                    : { name: 'reply', arguments: JSON.stringify({ text: this.replyText(body) }) },
              },
            ],
          };
    const promptTokens = Math.ceil(JSON.stringify(body.messages).length / 4);
    const completionTokens = Math.ceil(JSON.stringify(message).length / 4);
    return json(res, 200, {
      id: `chatcmpl-double-${this.completions}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? this.model,
      choices: [
        {
          index: 0,
          message,
          logprobs: null,
          finish_reason: answer?.kind === 'content' ? 'stop' : 'tool_calls',
        },
      ],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    });
  }

  /** Sleep `latencyMs`; false when the client hung up (it gave up waiting) or the double is closing. */
  private async wait(res: ServerResponse): Promise<boolean> {
    const hungUp = new AbortController();
    res.once('close', () => hungUp.abort());
    try {
      await delay(this.latencyMs, undefined, { signal: AbortSignal.any([hungUp.signal, this.closing.signal]) });
      return true;
    } catch (error) {
      if ((error as Error).name === 'AbortError') return false;
      throw error;
    }
  }

  private record(req: IncomingMessage, path: string, body: ChatCompletionBody | null, status: number): void {
    this.requests.push({ method: req.method ?? '', path, headers: req.headers, body, status });
  }
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
