import { performance } from 'node:perf_hooks';
import { QunliError } from '@app/contracts';
import { LONG_SECONDS_BUCKETS, type Metrics } from '@app/platform';
import { ChatModel, type ChatRequest, type ChatResponse, type LlmRole } from './chat-model.js';

/** The LLM metrics of the operating contract, shared by every app that calls a model. */
export function llmMetrics(metrics: Metrics) {
  return {
    calls: metrics.counter({
      name: 'qunli_llm_calls_total',
      help: 'LLM calls, by role, model and outcome (ok or the error code)',
      labelNames: ['role', 'model', 'outcome'],
    }),
    tokens: metrics.counter({
      name: 'qunli_llm_tokens_total',
      help: 'LLM tokens, by role, model and direction (in = prompt, out = completion)',
      labelNames: ['role', 'model', 'direction'],
    }),
    duration: metrics.histogram({
      name: 'qunli_llm_call_duration_seconds',
      help: 'Wall-clock time of one LLM call, retries included',
      labelNames: ['role', 'model', 'outcome'],
      buckets: LONG_SECONDS_BUCKETS,
    }),
    retries: metrics.counter({
      name: 'qunli_llm_retries_total',
      help: 'LLM attempts that failed transiently and were tried again, by role and model',
      labelNames: ['role', 'model'],
    }),
  };
}

/**
 * Counts every call of the wrapped model in the LLM metrics: outcome, tokens (also of failed and aborted calls,
 * as far as they are known), duration and retries. Wraps whichever adapter the provider chose.
 */
export class MeteredChatModel extends ChatModel {
  private readonly m: ReturnType<typeof llmMetrics>;

  constructor(
    readonly inner: ChatModel,
    metrics: Metrics,
  ) {
    super();
    this.m = llmMetrics(metrics);
  }

  get kind(): string {
    return this.inner.kind;
  }

  modelFor(role: LlmRole): string {
    return this.inner.modelFor(role);
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    const model = request.model ?? this.inner.modelFor(request.role);
    const role = request.role;
    const began = performance.now();
    const observer = request.observer;
    const counted: ChatRequest = {
      ...request,
      observer: {
        retry: (info) => {
          this.m.retries.inc({ role, model });
          observer?.retry?.(info);
        },
      },
    };
    try {
      const response = await this.inner.complete(counted);
      this.count(role, model, 'ok', began, response.usage.promptTokens, response.usage.completionTokens);
      return response;
    } catch (error) {
      const code = error instanceof QunliError ? error.code : 'LLM.HTTP_ERROR';
      const details = error instanceof QunliError ? error.details : {};
      this.count(role, model, code, began, numberOr0(details.tokensIn), numberOr0(details.tokensOut));
      throw error;
    }
  }

  private count(role: LlmRole, model: string, outcome: string, began: number, tokensIn: number, tokensOut: number) {
    this.m.calls.inc({ role, model, outcome });
    this.m.duration.observe({ role, model, outcome }, (performance.now() - began) / 1000);
    if (tokensIn > 0) this.m.tokens.inc({ role, model, direction: 'in' }, tokensIn);
    if (tokensOut > 0) this.m.tokens.inc({ role, model, direction: 'out' }, tokensOut);
  }
}

function numberOr0(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}
