import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  type ClientOptions,
} from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { QunliError } from '@app/contracts';
import type { QunliConfig } from '@app/platform';
import {
  ChatModel,
  estimateTokens,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type LlmRole,
  type ToolCall,
} from './chat-model.js';
import { isRetryable, parseRetryAfter, retryDelayMs, type RetryPolicy } from './llm-retry.rules.js';

type Params = Omit<OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming, 'stream'>;
type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** One attempt's answer, or how far it got before failing (for the token count of aborted streams). */
interface Attempt {
  content: string;
  toolCalls: ToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  model?: string;
}

/**
 * Chat completions against any OpenAI-compatible API at `OPENAI_BASE_URL`. Per role: the model
 * (`QUNLI_MODEL_<ROLE>`) and a timeout per attempt (`QUNLI_LLM_TIMEOUT_<ROLE>_MS`, else `QUNLI_LLM_TIMEOUT_MS`).
 * Retries 408/409/429/5xx and lost connections with exponential backoff (`Retry-After` wins), never a timeout or
 * an abort. Streams by default (`QUNLI_LLM_STREAM`), so an abort closes the connection and the provider stops
 * generating (and billing); usage comes from the final chunk (`stream_options.include_usage`, part of the public
 * chat completions API), estimated from the text when a server does not send it.
 */
export class OpenAiChatClient extends ChatModel {
  readonly kind = 'openai';
  private readonly client: OpenAI;
  private readonly retry: RetryPolicy;
  private readonly stream: boolean;

  constructor(private readonly config: QunliConfig) {
    super();
    this.client = new OpenAI({
      baseURL: config.OPENAI_BASE_URL,
      apiKey: config.OPENAI_API_KEY,
      timeout: config.QUNLI_LLM_TIMEOUT_MS,
      maxRetries: 0,
      // undici's fetch with its own connection pool: Node's global fetch keeps an idle connection only 4 s, so an
      // @ after a short pause paid a new TCP and TLS handshake before its first model call (ADR 0040).
      fetch: undiciFetch as unknown as NonNullable<ClientOptions['fetch']>,
      fetchOptions: {
        dispatcher: new Agent({
          keepAliveTimeout: config.QUNLI_LLM_KEEP_ALIVE_MS,
          // A server's own `Keep-Alive: timeout=…` hint may lengthen it, never past this.
          keepAliveMaxTimeout: Math.max(config.QUNLI_LLM_KEEP_ALIVE_MS, 60_000),
        }),
      } as ClientOptions['fetchOptions'],
    });
    this.retry = {
      maxRetries: config.QUNLI_LLM_MAX_RETRIES,
      baseDelayMs: config.QUNLI_LLM_RETRY_BASE_MS,
      maxDelayMs: Math.max(config.QUNLI_LLM_RETRY_BASE_MS, 30_000),
    };
    this.stream = config.QUNLI_LLM_STREAM === 'true';
  }

  modelFor(role: LlmRole): string {
    switch (role) {
      case 'planner':
        return this.config.QUNLI_MODEL_PLANNER;
      case 'replyer':
        return this.config.QUNLI_MODEL_REPLYER;
      case 'utils':
        return this.config.QUNLI_MODEL_UTILS;
    }
  }

  timeoutFor(role: LlmRole): number {
    const own =
      role === 'planner'
        ? this.config.QUNLI_LLM_TIMEOUT_PLANNER_MS
        : role === 'replyer'
          ? this.config.QUNLI_LLM_TIMEOUT_REPLYER_MS
          : this.config.QUNLI_LLM_TIMEOUT_UTILS_MS;
    return own ?? this.config.QUNLI_LLM_TIMEOUT_MS;
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    const model = request.model ?? this.modelFor(request.role);
    const params = this.params(request, model);
    const promptEstimate = estimateTokens(JSON.stringify(params.messages));
    let spentIn = 0;
    let spentOut = 0;
    for (let attempt = 1; ; attempt++) {
      const partial: Attempt = { content: '', toolCalls: [] };
      try {
        await this.attempt(params, request, partial);
        const usage = partial.usage;
        const estimated = usage === undefined;
        return {
          content: partial.content === '' ? null : partial.content,
          toolCalls: partial.toolCalls,
          usage: {
            promptTokens: spentIn + (usage?.prompt_tokens ?? promptEstimate),
            completionTokens: spentOut + (usage?.completion_tokens ?? estimateOutput(partial)),
          },
          model: partial.model || model,
          attempts: attempt,
          usageEstimated: estimated,
        };
      } catch (caught) {
        const error = llmError(caught, model, request.signal);
        // A request that reached the model cost its prompt (and whatever it generated before failing).
        if (partial.content !== '' || partial.toolCalls.length > 0) {
          spentIn += promptEstimate;
          spentOut += estimateOutput(partial);
        }
        const status = typeof error.details.status === 'number' ? error.details.status : undefined;
        Object.assign(error.details, { attempts: attempt, tokensIn: spentIn, tokensOut: spentOut });
        if (attempt > this.retry.maxRetries || !isRetryable(error.code, status) || request.signal?.aborted) {
          throw error;
        }
        const delayMs = retryDelayMs(this.retry, attempt, retryAfterOf(caught));
        request.observer?.retry?.({
          attempt,
          delayMs,
          code: error.code,
          ...(status !== undefined ? { status } : {}),
          message: error.message,
        });
        try {
          await sleep(delayMs, undefined, request.signal ? { signal: request.signal } : {});
        } catch {
          throw new QunliError('LLM.ABORTED', 'the LLM call was aborted while waiting to retry', {
            model,
            attempts: attempt,
            tokensIn: spentIn,
            tokensOut: spentOut,
          });
        }
      }
    }
  }

  private params(request: ChatRequest, model: string): Params {
    const tools = request.tools ?? [];
    const params: Params = { model, messages: request.messages.map(toWire) };
    if (tools.length > 0 && request.toolChoice !== 'none') {
      params.tools = tools.map((tool) => ({
        type: 'function' as const,
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      }));
      params.tool_choice = request.toolChoice ?? 'auto';
    }
    if (request.maxTokens !== undefined) params.max_tokens = request.maxTokens;
    return params;
  }

  /** One HTTP exchange, filling `into` as the answer arrives (so an abort mid-stream knows what it got). */
  private async attempt(params: Params, request: ChatRequest, into: Attempt): Promise<void> {
    const timeout = this.timeoutFor(request.role);
    const timer = AbortSignal.timeout(timeout);
    const signal = request.signal ? AbortSignal.any([request.signal, timer]) : timer;
    try {
      if (!this.stream) {
        const completion = await this.client.chat.completions.create({ ...params, stream: false }, { signal, timeout });
        const message = completion.choices[0]?.message;
        into.content = message?.content ?? '';
        for (const call of message?.tool_calls ?? []) {
          into.toolCalls.push(
            call.type === 'function'
              ? { id: call.id, name: call.function.name, arguments: call.function.arguments }
              : { id: call.id, name: call.custom.name, arguments: call.custom.input },
          );
        }
        if (completion.usage) into.usage = completion.usage;
        into.model = completion.model;
        return;
      }
      const stream = await this.client.chat.completions.create(
        { ...params, stream: true, stream_options: { include_usage: true } },
        { signal, timeout },
      );
      const calls = new Map<number, ToolCall>();
      for await (const chunk of stream) {
        if (chunk.model) into.model = chunk.model;
        if (chunk.usage) into.usage = chunk.usage;
        const delta = chunk.choices[0]?.delta;
        if (!delta) continue;
        if (delta.content) into.content += delta.content;
        for (const part of delta.tool_calls ?? []) {
          let call = calls.get(part.index);
          if (!call) {
            call = { id: part.id ?? `call_${part.index}`, name: '', arguments: '' };
            calls.set(part.index, call);
            into.toolCalls.push(call);
          }
          if (part.id) call.id = part.id;
          if (part.function?.name) call.name += part.function.name;
          if (part.function?.arguments) call.arguments += part.function.arguments;
        }
      }
    } catch (error) {
      if (timer.aborted && !request.signal?.aborted) {
        throw new QunliError('LLM.TIMEOUT', `the LLM did not answer within ${timeout} ms`, {
          model: params.model,
          timeoutMs: timeout,
        });
      }
      throw error;
    }
  }
}

function toWire(message: ChatMessage): Message {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      return message.toolCalls && message.toolCalls.length > 0
        ? {
            role: 'assistant',
            content: message.content === '' ? null : message.content,
            tool_calls: message.toolCalls.map((call) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.name, arguments: call.arguments },
            })),
          }
        : { role: 'assistant', content: message.content };
    case 'tool':
      return { role: 'tool', content: message.content, tool_call_id: message.toolCallId };
  }
}

function estimateOutput(partial: Attempt): number {
  return estimateTokens(partial.content + partial.toolCalls.map((c) => c.name + c.arguments).join(''));
}

function retryAfterOf(error: unknown): number | undefined {
  if (!(error instanceof APIError) || !error.headers) return undefined;
  const headers = error.headers as Headers;
  return parseRetryAfter(headers.get('retry-after'), headers.get('retry-after-ms'), Date.now());
}

/** Order matters: the timeout and abort errors are subclasses of the connection and API errors. */
function llmError(error: unknown, model: string, signal: AbortSignal | undefined): QunliError {
  if (error instanceof QunliError) return error;
  if (error instanceof APIUserAbortError || (signal?.aborted && (error as Error).name === 'AbortError')) {
    return new QunliError('LLM.ABORTED', 'the LLM call was aborted', { model });
  }
  if (signal?.aborted) return new QunliError('LLM.ABORTED', 'the LLM call was aborted', { model });
  if (error instanceof APIConnectionTimeoutError) {
    return new QunliError('LLM.TIMEOUT', 'the LLM did not answer in time', { model });
  }
  if (error instanceof APIConnectionError) {
    return new QunliError('LLM.UNREACHABLE', `the LLM API could not be reached: ${error.message}`, { model });
  }
  if (error instanceof APIError) {
    const code = error.status === 429 ? 'LLM.RATE_LIMITED' : 'LLM.HTTP_ERROR';
    return new QunliError(code, `the LLM API answered ${String(error.status)}: ${error.message}`, {
      model,
      status: error.status ?? null,
    });
  }
  return new QunliError('LLM.HTTP_ERROR', `the LLM call failed: ${(error as Error).message}`, { model });
}
