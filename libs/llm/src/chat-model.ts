/** Which job an LLM call does; a label on every LLM metric and the key to the model setting. */
export type LlmRole = 'planner' | 'replyer' | 'utils';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A function the model may call, described by a JSON schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  role: LlmRole;
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** `required`: the model must call one of the tools. */
  toolChoice: 'required' | 'auto';
  /** Aborts the call (the episode's deadline). */
  signal?: AbortSignal;
  /**
   * The chat message being answered, as plain text. Real models read it from the prompt; the offline responder,
   * which cannot read, echoes it so a person sees which message it got.
   */
  subjectText?: string;
}

/** A tool call as the model wrote it: `arguments` is raw text that may not even be JSON. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatResponse {
  content: string | null;
  toolCalls: ToolCall[];
  usage: ChatUsage;
  /** The model that answered, as the API reports it. */
  model: string;
}

/**
 * The port cognition talks to: one chat completion with tools. Adapters: the OpenAI-compatible HTTP client and
 * the offline responder. Failures are `QunliError`s with codes `LLM.TIMEOUT`, `LLM.HTTP_ERROR`, `LLM.UNREACHABLE`
 * or `LLM.ABORTED` (the caller's signal fired).
 */
export abstract class ChatModel {
  /** `openai` or `offline`, for the start-up log. */
  abstract readonly kind: string;
  /** The configured model for a role (the answering model may report a more specific name). */
  abstract modelFor(role: LlmRole): string;
  abstract complete(request: ChatRequest): Promise<ChatResponse>;
}
