import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { QunliError } from '@app/contracts';
import { ChatModel, type ChatCallObserver, type ChatMessage, type ChatResponse, type ToolSpec } from '@app/llm';
import { HookRegistry } from '../hooks/hook.registry.js';

export interface LlmCallRecord {
  role: 'planner' | 'replyer' | 'utils';
  model: string;
  outcome: string;
  tokensIn: number;
  tokensOut: number;
  estimated: boolean;
  attempts: number;
  latencyMs: number;
}

export type PlannerResult =
  { ok: true; response: ChatResponse; call: LlmCallRecord } | { ok: false; error: QunliError; call: LlmCallRecord };

export interface PlannerRequest {
  episodeId: string;
  groupId: string | null;
  step: number;
  messages: ChatMessage[];
  tools: ToolSpec[];
  signal: AbortSignal;
  subjectText: string;
  subjectMessageId: string;
  observer?: ChatCallObserver;
  /** `timing_gate` for the timing gate's call. */
  purpose?: string;
  maxTokens?: number;
}

/** Record of a call that failed, from what the error says it spent. */
export function failedCall(
  role: LlmCallRecord['role'],
  model: string,
  error: QunliError,
  began: number,
): LlmCallRecord {
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    role,
    model,
    outcome: error.code,
    tokensIn: n(error.details.tokensIn),
    tokensOut: n(error.details.tokensOut),
    estimated: true,
    attempts: Math.max(1, n(error.details.attempts)),
    latencyMs: performance.now() - began,
  };
}

/**
 * One planner call (role `planner`): the `planner.before_request` hook may rewrite messages and tools, the
 * `planner.after_response` hook the answer. The caller's signal aborts it (interrupt, stop, deadline).
 */
@Injectable()
export class Planner {
  constructor(
    private readonly model: ChatModel,
    private readonly hooks: HookRegistry,
  ) {}

  get modelName(): string {
    return this.model.modelFor('planner');
  }

  async plan(request: PlannerRequest): Promise<PlannerResult> {
    const info = { episodeId: request.episodeId, groupId: request.groupId, step: request.step };
    const before = await this.hooks.run('planner.before_request', {
      ...info,
      messages: request.messages.map((m) => ({ ...m })),
      tools: request.tools.map((t) => ({ ...t })),
    });
    const model = this.model.modelFor('planner');
    const began = performance.now();
    let response: ChatResponse;
    try {
      response = await this.model.complete({
        role: 'planner',
        messages: before.messages as ChatMessage[],
        tools: before.tools,
        toolChoice: 'required',
        signal: request.signal,
        subjectText: request.subjectText,
        subjectMessageId: request.subjectMessageId,
        ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
        ...(request.observer ? { observer: request.observer } : {}),
      });
    } catch (error) {
      if (!(error instanceof QunliError)) throw error;
      return { ok: false, error, call: failedCall('planner', model, error, began) };
    }
    const call: LlmCallRecord = {
      role: 'planner',
      model: response.model || model,
      outcome: 'ok',
      tokensIn: response.usage.promptTokens,
      tokensOut: response.usage.completionTokens,
      estimated: response.usageEstimated === true,
      attempts: response.attempts ?? 1,
      latencyMs: performance.now() - began,
    };
    const after = await this.hooks.run('planner.after_response', {
      ...info,
      content: response.content,
      toolCalls: response.toolCalls.map((c) => ({ ...c })),
    });
    return { ok: true, response: { ...response, content: after.content, toolCalls: after.toolCalls }, call };
  }
}
