import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { QunliError } from '@app/contracts';
import type { QunliConfig } from '@app/platform';
import { ChatModel, type ChatRequest, type ChatResponse, type LlmRole, type ToolCall } from './chat-model.js';

/**
 * Chat completions against any OpenAI-compatible API at `OPENAI_BASE_URL`. The SDK retries once (connection
 * errors, 408/409/429/5xx) within `QUNLI_LLM_TIMEOUT_MS` per attempt; what still fails becomes a `QunliError`.
 */
export class OpenAiChatClient extends ChatModel {
  readonly kind = 'openai';
  private readonly client: OpenAI;

  constructor(private readonly config: QunliConfig) {
    super();
    this.client = new OpenAI({
      baseURL: config.OPENAI_BASE_URL,
      apiKey: config.OPENAI_API_KEY,
      timeout: config.QUNLI_LLM_TIMEOUT_MS,
      maxRetries: 1,
    });
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

  async complete(request: ChatRequest): Promise<ChatResponse> {
    const model = this.modelFor(request.role);
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.client.chat.completions.create(
        {
          model,
          messages: request.messages,
          tools: request.tools.map((tool) => ({
            type: 'function' as const,
            function: { name: tool.name, description: tool.description, parameters: tool.parameters },
          })),
          tool_choice: request.toolChoice,
        },
        { signal: request.signal },
      );
    } catch (error) {
      throw llmError(error, model);
    }
    const message = completion.choices[0]?.message;
    const toolCalls: ToolCall[] = [];
    for (const call of message?.tool_calls ?? []) {
      if (call.type === 'function') {
        toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
      } else {
        toolCalls.push({ id: call.id, name: call.custom.name, arguments: call.custom.input });
      }
    }
    return {
      content: message?.content ?? null,
      toolCalls,
      usage: {
        promptTokens: completion.usage?.prompt_tokens ?? 0,
        completionTokens: completion.usage?.completion_tokens ?? 0,
      },
      model: completion.model || model,
    };
  }
}

/** Order matters: the timeout and abort errors are subclasses of the connection and API errors. */
function llmError(error: unknown, model: string): QunliError {
  if (error instanceof APIUserAbortError) {
    return new QunliError('LLM.ABORTED', 'the LLM call was aborted', { model });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new QunliError('LLM.TIMEOUT', 'the LLM did not answer in time', { model });
  }
  if (error instanceof APIConnectionError) {
    return new QunliError('LLM.UNREACHABLE', `the LLM API could not be reached: ${error.message}`, { model });
  }
  if (error instanceof APIError) {
    return new QunliError('LLM.HTTP_ERROR', `the LLM API answered ${String(error.status)}: ${error.message}`, {
      model,
      status: error.status ?? null,
    });
  }
  if (error instanceof QunliError) return error;
  return new QunliError('LLM.HTTP_ERROR', `the LLM call failed: ${(error as Error).message}`, { model });
}
