import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { answeredText, newestMessageId, type ChatCompletionBody } from '@app/testing';

interface ChatMessage {
  role: string;
  content?: unknown;
}

interface ChatBody {
  model?: string;
  messages?: ChatMessage[];
  tools?: { type: string; function?: { name: string; parameters?: unknown } }[];
}

/** One completion the provider answered. */
export interface LlmCall {
  at: number;
  model: string;
  /** The text of the message being answered (the prompt's 【当前消息】 section, else the last user turn). */
  current: string;
  tool: string | null;
  promptTokens: number;
  completionTokens: number;
  latencyMs: number;
}

export interface LlmProviderOptions {
  /** Median latency in product milliseconds (before `timeScale`); default 600. */
  medianLatencyMs?: number;
  /** Log-normal spread of the latency (σ of its log); default 0.35. */
  latencySpread?: number;
  /** Product milliseconds per generated token on top of the first-token latency; default 20 (50 tokens/s). */
  msPerToken?: number;
  /** Wall latency is divided by this, like every other duration in a compressed replay; default 1. */
  timeScale?: number;
  /** What the bot says, given the text of the message being answered. */
  reply?: (current: string, body: ChatBody) => string;
  /** Seed of the latency draws, so two runs see the same latency sequence. */
  seed?: number;
}

const CJK = /[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]/g;

/**
 * Tokens a BPE tokenizer of today's chat models (o200k-like) spends on `text`: about 0.8 per CJK character and a
 * quarter per other character. An estimate, stable and cheap; the figures report it as such.
 */
export function estimateTokens(text: string): number {
  const cjk = text.match(CJK)?.length ?? 0;
  return Math.ceil(cjk * 0.8 + (text.length - cjk) / 4);
}

/**
 * What is being answered, as cognition's prompts show it: the replyer's whole 【当前消息】 section (one sender's
 * fragments, one per line, up to the next 【…】 heading), else the planner's newest `[发言内容]` or the last user
 * turn (the shared double's reading of the same prompts).
 */
export function currentMessage(body: ChatBody): string {
  const turns = (body.messages ?? []).filter((m) => m.role === 'user' && typeof m.content === 'string');
  for (const turn of [...turns].reverse()) {
    const text = turn.content as string;
    // The heading on a line of its own (the rules also name the section, inside a sentence).
    const start = text.search(/(^|\n)【当前消息】\n/);
    if (start < 0) continue;
    const rest = text.slice(text.indexOf('【当前消息】\n', start) + '【当前消息】\n'.length);
    const end = rest.indexOf('\n【');
    return (end < 0 ? rest : rest.slice(0, end)).trim();
  }
  return answeredText(body as ChatCompletionBody);
}

/** `judge_jargon`'s arguments from a model that finds every word it was asked about (`词：…`) an ordinary one. */
export function ordinaryWords(body: { messages?: { role: string; content?: unknown }[] }): {
  verdicts: { term: string; is_jargon: false; meaning: string }[];
} {
  const prompt = (body.messages ?? [])
    .filter((m) => m.role === 'user' && typeof m.content === 'string')
    .map((m) => m.content as string)
    .join('\n');
  return {
    verdicts: [...prompt.matchAll(/^词：(.+)$/gm)].map((m) => ({ term: m[1]!, is_jargon: false, meaning: '普通词语' })),
  };
}

/** The planner's `reply` names the message by its `[msg_id]`; an older, single-call prompt wants the text. */
function replyArguments(body: ChatBody, text: string): Record<string, string> {
  const reply = (body.tools ?? []).find((t) => t.function?.name === 'reply');
  const properties = (reply?.function?.parameters as { properties?: Record<string, unknown> } | undefined)?.properties;
  return properties && 'msg_id' in properties ? { msg_id: turnMessageId(body) ?? '0' } : { text };
}

/** The message the planner is asked to handle ("这次轮到你处理的是 [msg_id]…"), as a cooperative model answers it. */
function turnMessageId(body: ChatBody): string | undefined {
  for (const m of [...(body.messages ?? [])].reverse()) {
    const found = typeof m.content === 'string' ? /轮到你处理的是 \[msg_id\](\S+) 这条消息/.exec(m.content) : null;
    if (found) return found[1];
  }
  return newestMessageId(body as ChatCompletionBody);
}

/** Deterministic PRNG (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * An OpenAI-compatible chat-completions endpoint that behaves like a hosted provider for the harnesses: answers
 * with a `reply` tool call when the request offers that tool (plain content otherwise), with a log-normal
 * first-token latency plus a per-token generation time, and with `usage` counted the way a provider bills. Every
 * call is recorded.
 */
export class LlmProvider {
  readonly calls: LlmCall[] = [];
  /** Requests the client gave up on before the answer (a provider bills those too). */
  abandoned = 0;
  private readonly server: Server;
  private readonly closing = new AbortController();
  private readonly draw: () => number;
  private count = 0;

  private constructor(private readonly options: LlmProviderOptions) {
    this.draw = random(options.seed ?? 7);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (error as Error).message, type: 'server_error' } }));
      });
    });
  }

  static async start(options: LlmProviderOptions = {}): Promise<LlmProvider> {
    const provider = new LlmProvider(options);
    provider.server.listen(0, '127.0.0.1');
    await once(provider.server, 'listening');
    return provider;
  }

  /** `OPENAI_BASE_URL`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  get totalTokens(): number {
    return this.calls.reduce((sum, call) => sum + call.promptTokens + call.completionTokens, 0);
  }

  async close(): Promise<void> {
    this.closing.abort();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Standard normal draw (Box–Muller). */
  private gaussian(): number {
    const u = Math.max(this.draw(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.draw());
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      return json(res, 200, { object: 'list', data: [{ id: 'harness-model', object: 'model', owned_by: 'qunli' }] });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' } });
    }
    let body: ChatBody;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatBody;
    } catch {
      return json(res, 400, { error: { message: 'invalid JSON', type: 'invalid_request_error' } });
    }
    const current = currentMessage(body);
    const text = (this.options.reply ?? ((c) => `嗯嗯，${c.slice(0, 20)}`))(current, body);
    const offered = new Set((body.tools ?? []).map((t) => t.function?.name));
    // Memory's utils calls ask for `record_memory` or `judge_jargon`: a cooperating model records a summary (and here
    // no facts), or calls every word it was asked about an ordinary one.
    const call = offered.has('reply')
      ? { name: 'reply', arguments: JSON.stringify(replyArguments(body, text)) }
      : offered.has('record_memory')
        ? {
            name: 'record_memory',
            arguments: JSON.stringify({ summary: `群里在聊：${current.slice(0, 60)}`, facts: [] }),
          }
        : offered.has('judge_jargon')
          ? { name: 'judge_jargon', arguments: JSON.stringify(ordinaryWords(body)) }
          : null;
    const offersReply = call !== null;
    const message = call
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `call_${++this.count}`, type: 'function', function: call }],
        }
      : { role: 'assistant', content: text };
    const promptText = (body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
    const promptTokens =
      estimateTokens(promptText) + 4 * (body.messages?.length ?? 0) + estimateTokens(JSON.stringify(body.tools ?? []));
    const completionTokens = estimateTokens(JSON.stringify(offersReply ? { text } : text)) + (offersReply ? 12 : 2);
    const productLatency =
      (this.options.medianLatencyMs ?? 600) * Math.exp((this.options.latencySpread ?? 0.35) * this.gaussian()) +
      completionTokens * (this.options.msPerToken ?? 20);
    const wall = productLatency / (this.options.timeScale ?? 1);
    const hungUp = new AbortController();
    res.once('close', () => hungUp.abort());
    try {
      await delay(wall, undefined, { signal: AbortSignal.any([hungUp.signal, this.closing.signal]) });
    } catch {
      this.abandoned += 1; // the client gave up (a killed cognition) or the provider is closing: nothing to answer
      return;
    }
    this.calls.push({
      at: Date.now(),
      model: body.model ?? 'harness-model',
      current,
      tool: call?.name ?? null,
      promptTokens,
      completionTokens,
      latencyMs: Math.round(productLatency),
    });
    json(res, 200, {
      id: `chatcmpl-harness-${this.calls.length}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? 'harness-model',
      choices: [{ index: 0, message, logprobs: null, finish_reason: offersReply ? 'tool_calls' : 'stop' }],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    });
  }
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
