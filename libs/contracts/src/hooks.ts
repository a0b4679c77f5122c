/*
 * Episode hooks (ADR-0001 §15, Maisaka's hook specs): named points where a plugin may rewrite what the planner or
 * the replyer sends and receives. Handlers never abort an episode; a handler that throws is logged, counted and
 * skipped. Pure types: cognition runs them.
 */

export const HOOK_NAMES = [
  /** Rewrite the planner's messages and tool definitions. */
  'planner.before_request',
  /** Rewrite the planner's text and tool calls. */
  'planner.after_response',
  /** Rewrite the replyer task: model, extra prompt, the reply arguments. */
  'replyer.before_request',
  /** Rewrite the replyer's finished messages just before the model call. */
  'replyer.before_model_request',
  /** Rewrite the reply text, or ask for one regeneration. */
  'replyer.after_response',
] as const;
export type HookName = (typeof HOOK_NAMES)[number];

/** A chat message as hooks see it (the OpenAI shape, simplified). */
export interface HookChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  toolCallId?: string;
  toolCalls?: { id: string; name: string; arguments: string }[];
}

export interface HookToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface HookEpisodeInfo {
  episodeId: string;
  groupId: string | null;
  step: number;
}

export interface HookPayloads {
  'planner.before_request': HookEpisodeInfo & { messages: HookChatMessage[]; tools: HookToolDefinition[] };
  'planner.after_response': HookEpisodeInfo & {
    content: string | null;
    toolCalls: { id: string; name: string; arguments: string }[];
  };
  'replyer.before_request': HookEpisodeInfo & {
    /** `null`: the role's configured model. */
    model: string | null;
    extraPrompt: string | null;
    replyArgs: { msg_id: string; quote?: boolean; intent?: string };
  };
  'replyer.before_model_request': HookEpisodeInfo & { messages: HookChatMessage[] };
  'replyer.after_response': HookEpisodeInfo & {
    text: string;
    /** Set true to have the replyer write the reply once more (at most once per reply). */
    regenerate?: boolean;
  };
}

/** A hook handler returns a rewritten payload (or part of it), or nothing to leave it as it is. */
export type HookHandler<N extends HookName> = (
  payload: Readonly<HookPayloads[N]>,
) => Promise<Partial<HookPayloads[N]> | void> | Partial<HookPayloads[N]> | void;

export interface HookRegistration<N extends HookName = HookName> {
  name: N;
  handler: HookHandler<N>;
  /** Who registered it, for logs and clean unregistration. */
  source: string;
  /** Lower runs first; default 100. */
  priority?: number;
}

/** Injection token (a provider giving `HookRegistration[]`), like `TOOL_PROVIDERS`. */
export const EPISODE_HOOKS = 'qunli:episode-hooks';
