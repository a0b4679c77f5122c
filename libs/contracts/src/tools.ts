import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { flattenValidationErrors } from './envelope.js';
import type { SenderRole } from './message.js';

/*
 * The tool contract (ADR-0001 §12, §15): what a tool is, what it is given, what it returns. Cognition's registry
 * runs tools; anything may provide them (builtins, MCP servers, memory, games) by implementing `Tool` and
 * registering through a `ToolRegistrar`. Pure types: no Nest, no I/O.
 */

/** Who may make the bot use a tool, from the OneBot sender role of the message being answered. */
export const TOOL_PERMISSIONS = ['member', 'admin', 'owner'] as const;
export type ToolPermission = (typeof TOOL_PERMISSIONS)[number];

/**
 * `core`: always listed to the planner. `deferred`: hidden until `tool_search` finds it (Maisaka's deferred
 * discovery), so the planner sees few tools at a time.
 */
export const TOOL_VISIBILITIES = ['core', 'deferred'] as const;
export type ToolVisibility = (typeof TOOL_VISIBILITIES)[number];

/** A JSON Schema object describing a tool's arguments, as sent to the model. */
export type JsonSchema = Record<string, unknown>;

export interface ToolSpec {
  /** `[a-z][a-z0-9_]*`, unique in the registry. */
  name: string;
  /** What the model reads to decide whether to use it (Chinese, like everything the model reads). */
  description: string;
  inputSchema: JsonSchema;
  visibility: ToolVisibility;
  /** The lowest sender role that may cause a call (configured owners count as `owner`). */
  permission: ToolPermission;
  timeoutMs: number;
  /** Changes something outside the episode (sends, writes, calls a service). */
  sideEffect: boolean;
  /** Safe to run again with the same arguments after a crash or redelivery. */
  idempotent: boolean;
  /** Longest result text the model gets; longer is cut and marked. */
  maxResultChars: number;
  /** Attempts after a failure the tool reports as retryable. */
  maxRetries: number;
  /** Dangerous: the call needs the sender's explicit confirmation before it runs. */
  requiresConfirmation: boolean;
  /** The call finishes later with a `tool.result` event; the episode waits (`awaiting_observation`). */
  asynchronous?: boolean;
  /** Who provides it (`builtin`, `mcp:<server>`, `memory`, …), for the panel and for clean unregistration. */
  source: string;
}

/** What a tool is given besides its arguments. */
export interface ToolContext {
  episodeId: string;
  /** The id of this call (the model's tool call id, made unique per episode). */
  toolCallId: string;
  /** The conversation the episode belongs to; a tool never acts on another one. */
  groupId: string | null;
  selfId: string;
  /** The sender of the message being answered and their role there. */
  senderId: string;
  senderRole: SenderRole | 'owner';
  /** Product time. */
  now: Date;
  /** Aborted on timeout, interrupt or cancel. */
  signal: AbortSignal;
}

export interface ToolOutcome {
  ok: boolean;
  /** What the model sees (capped by the registry to `maxResultChars`; wrapped as data, never instructions). */
  text: string;
  /** Structured result for the log and the panel. */
  data?: Record<string, unknown>;
  error?: { code: string; message: string; retryable?: boolean };
}

/**
 * A tool. `validate` checks the model's arguments (class-validator in practice) and returns field errors; a
 * malformed call becomes a corrective observation instead of running.
 */
export interface Tool<A = Record<string, unknown>> extends ToolSpec {
  validate(args: unknown): { ok: true; value: A } | { ok: false; errors: string[] };
  execute(args: A, context: ToolContext): Promise<ToolOutcome>;
}

/** Where tools are registered; the returned function unregisters (plugins and MCP servers that go away). */
export interface ToolRegistrar {
  register(tool: Tool<never>): () => void;
}

/**
 * Prompt sections provided from outside cognition (ADR §14): the life line (【你正在做的事】), memory (【相关记忆】),
 * the sender's profile. Each returns Chinese text for its section, or `null` when it has nothing.
 */
export const PROMPT_SECTIONS = ['activity', 'memory', 'sender', 'thread', 'jargon'] as const;
export type PromptSection = (typeof PROMPT_SECTIONS)[number];

export interface PromptContextRequest {
  episodeId: string;
  groupId: string | null;
  selfId: string;
  senderId: string;
  senderName: string;
  threadId?: string;
  /** The text being answered (fragments joined). */
  text: string;
  /** Product time. */
  now: Date;
}

export interface PromptContextProvider {
  readonly section: PromptSection;
  provide(request: PromptContextRequest): Promise<string | null>;
}

/**
 * Injection tokens (plain strings, so contracts stay free of Nest) under which modules outside cognition hand it
 * their tools and prompt sections: a provider of `TOOL_PROVIDERS` gives `Tool[]`, one of `PROMPT_CONTEXT_PROVIDERS`
 * gives `PromptContextProvider[]`. Cognition registers what it is given at start and unregisters it at shutdown.
 */
export const TOOL_PROVIDERS = 'qunli:tool-providers';
export const PROMPT_CONTEXT_PROVIDERS = 'qunli:prompt-context-providers';

/**
 * Check a model's tool arguments against a class-validator class (the tool's argument class): the typed value, or
 * every bad field as `path: message`. Unknown fields are refused, so a model cannot smuggle in a `group_id`.
 */
export function validateToolArgs<A extends object>(
  cls: new () => A,
  args: unknown,
): { ok: true; value: A } | { ok: false; errors: string[] } {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return { ok: false, errors: ['arguments must be an object'] };
  }
  const value = plainToInstance(cls, args);
  const errors = flattenValidationErrors(
    validateSync(value, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true }),
  );
  return errors.length > 0 ? { ok: false, errors: errors.map((e) => `${e.path}: ${e.message}`) } : { ok: true, value };
}
