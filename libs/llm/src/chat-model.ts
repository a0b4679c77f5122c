/** Which job an LLM call does; a label on every LLM metric and the key to the model setting. */
export type LlmRole = 'planner' | 'replyer' | 'utils';

/** A tool call as the model wrote it: `arguments` is raw text that may not even be JSON. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * One chat message. `assistant` messages may carry the tool calls the model made; `tool` messages answer one of
 * them by `toolCallId`.
 */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; content: string; toolCallId: string };

/** A function the model may call, described by a JSON schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What happened during a call, for the caller's own records (monitor events, step logs). */
export interface ChatCallObserver {
  /** A failed attempt will be tried again after `delayMs`. */
  retry?(info: { attempt: number; delayMs: number; code: string; status?: number; message: string }): void;
}

export interface ChatRequest {
  role: LlmRole;
  messages: ChatMessage[];
  /** Tools the model may call; none for a plain text answer (the replyer). */
  tools?: ToolSpec[];
  /** `required`: the model must call one of the tools; `none` or no tools: text only. */
  toolChoice?: 'required' | 'auto' | 'none';
  /** Overrides the role's configured model (a `replyer.before_request` hook may choose one). */
  model?: string;
  /** Upper bound on the answer's tokens (`max_tokens`). */
  maxTokens?: number;
  /** Aborts the call (deadline, interrupt, cancel); an abort mid-stream stops generation and billing. */
  signal?: AbortSignal;
  /**
   * The chat message being answered, as plain text. Real models read it from the prompt; the offline responder,
   * which cannot read, echoes it so a person sees which message it got.
   */
  subjectText?: string;
  /** The OneBot id of that message, so the offline planner can answer it. */
  subjectMessageId?: string;
  observer?: ChatCallObserver;
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
  /** Attempts made (1 without retries). Optional for adapters that never retry. */
  attempts?: number;
  /** True when the API reported no usage and the tokens were estimated from the text. */
  usageEstimated?: boolean;
}

/**
 * The port every app talks to: one chat completion, with or without tools. Adapters: the OpenAI-compatible HTTP
 * client and the offline responder. Failures are `QunliError`s with codes `LLM.TIMEOUT`, `LLM.HTTP_ERROR`,
 * `LLM.RATE_LIMITED`, `LLM.UNREACHABLE` or `LLM.ABORTED` (the caller's signal fired); their `details` carry
 * `model`, `attempts` and, when the API said, `status`, plus `tokensIn` / `tokensOut` already spent.
 */
export abstract class ChatModel {
  /** `openai` or `offline`, for the start-up log. */
  abstract readonly kind: string;
  /** The configured model for a role (the answering model may report a more specific name). */
  abstract modelFor(role: LlmRole): string;
  abstract complete(request: ChatRequest): Promise<ChatResponse>;
}

/** Rough token count of text (≈ 4 characters of JSON per token), for calls whose usage the API did not report. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
