import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '@app/onebot';
import { completionChunks, type ChatCompletionBody } from './llm-double.js';

/** What the double answers for one tool call: the arguments object. */
export type UtilsAnswer = (tool: string, body: ChatCompletionBody) => Record<string, unknown>;

/**
 * Tokens as a CJK-aware estimate: one per CJK character, one per four other characters. Closer to real tokenizers
 * on Chinese chat than characters / 4, which is what the usage figures of a benchmark need.
 */
export function estimateTokens(text: string): number {
  let cjk = 0;
  let other = 0;
  for (const char of text) {
    if (/[\u3000-\u9fff\uff00-\uffef]/.test(char)) cjk += 1;
    else other += 1;
  }
  return cjk + Math.ceil(other / 4);
}

/**
 * A real HTTP chat-completions server for utils-model work (memory, jargon, details): every request that offers
 * tools is answered with a call of the first tool, its arguments from `answer`, as a stream when asked for one (the
 * apps' default) and as one JSON answer otherwise. Unlike `LlmDouble` it needs no script, so a benchmark can run
 * thousands of memory calls. Usage is reported with `estimateTokens`.
 */
export class UtilsLlmDouble {
  calls = 0;
  promptTokens = 0;
  completionTokens = 0;
  private readonly server: Server;

  private constructor(private readonly answer: UtilsAnswer) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (error as Error).message } }));
      });
    });
  }

  static async start(answer: UtilsAnswer): Promise<UtilsLlmDouble> {
    const double = new UtilsLlmDouble(answer);
    double.server.listen(0, '127.0.0.1');
    await once(double.server, 'listening');
    return double;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.server.close((error) => (error ? reject(error) : resolve())));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = JSON.parse((await readBody(req)) || '{}') as ChatCompletionBody;
    const tool = body.tools?.[0]?.function?.name;
    if (req.method !== 'POST' || !tool) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'only tool calls are answered' } }));
      return;
    }
    this.calls += 1;
    const args = JSON.stringify(this.answer(tool, body));
    const prompt = estimateTokens(JSON.stringify(body.messages));
    const completion = estimateTokens(args) + 10;
    this.promptTokens += prompt;
    this.completionTokens += completion;
    const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
    const call = { id: `call_${this.calls}`, type: 'function', function: { name: tool, arguments: args } };
    if (body.stream) {
      // The apps stream by default (QUNLI_LLM_STREAM).
      const events = completionChunks({
        id: `chatcmpl-utils-${this.calls}`,
        model: body.model ?? 'utils-double',
        content: null,
        calls: [{ id: call.id, ...call.function }],
        finish: 'tool_calls',
        usage: body.stream_options?.include_usage ? usage : null,
      });
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n');
      return;
    }
    const text = JSON.stringify({
      id: `chatcmpl-utils-${this.calls}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? 'utils-double',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            refusal: null,
            tool_calls: [call],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage,
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }
}
