import {
  IsBoolean,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';

/*
 * The action protocol (ADR-0001 §8): what a planner step may decide. Each action is a tool the planner calls
 * (`reply`, `wait`, `no_action`, `finish`, …) or a call of a registered tool (`tool_call`). Argument classes are
 * validated with class-validator; a malformed call becomes a corrective observation instead of acting.
 */

export const EPISODE_ACTION_TYPES = [
  /** Say something in the episode's own conversation (the replyer writes the words). */
  'reply',
  /** Park the episode for `seconds` (a durable timer); it resumes with what was said meanwhile. */
  'wait',
  /** Keep watching without acting: ends the episode without a reply. */
  'observe',
  /** Decide not to act: ends the episode without a reply (Maisaka `no_action`). */
  'no_action',
  /** Call a registered tool (builtin, MCP, memory, …). */
  'tool_call',
  /** Act in a game session (contract only: no game engine yet). */
  'game_action',
  /** End the episode; `replied` when it said something earlier, else `no_reply`. */
  'finish',
] as const;
export type EpisodeActionType = (typeof EPISODE_ACTION_TYPES)[number];

/** Longest reply text the replyer may produce. */
export const REPLY_MAX_CHARS = 2000;
/** Longest `wait` a planner may ask for (product seconds). */
export const WAIT_MAX_SECONDS = 600;

/** `reply`: the planner picks which message to answer; the replyer writes the words. */
export class ReplyActionArgs {
  /** The OneBot message id of the message being answered (one sender's message; never several merged). */
  @IsString()
  @MinLength(1)
  @MaxLength(32)
  msg_id!: string;

  /** Quote (reply to) that message in the sent message. */
  @IsOptional()
  @IsBoolean()
  quote?: boolean;

  /** What to get across, in brief: guidance for the replyer, never sent as is. */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  intent?: string;

  /** Keep thinking after this reply (to send an emoji, answer a second sender…); default: the episode ends. */
  @IsOptional()
  @IsBoolean()
  continue?: boolean;
}

export class WaitActionArgs {
  @IsInt()
  @Min(1)
  @Max(WAIT_MAX_SECONDS)
  seconds!: number;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  reason?: string;
}

/** `no_action` / `observe` / `finish`. */
export class EndActionArgs {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  reason?: string;
}

/** `game_action` (contract only). */
export class GameActionArgs {
  @IsString()
  @Matches(/^[a-z][a-z0-9_]{0,63}$/)
  game!: string;

  @IsString()
  @MaxLength(64)
  command!: string;

  @IsOptional()
  @IsString()
  sessionId?: string;

  @IsOptional()
  @IsObject()
  args?: Record<string, unknown>;
}

/** How a reply is sent: to the whole conversation, quoting the answered message or not. */
export interface ReplyTarget {
  targetType: 'group' | 'private';
  targetId: string;
  /** The sender being answered. */
  toUserId: string;
  quoteMessageId?: string;
}

/** Why an episode ended, stored with its outcome (`episodes.ended_by`). */
export const EPISODE_END_CAUSES = [
  'action',
  'deadline',
  'token_budget',
  'max_steps',
  'invalid_calls',
  'llm_error',
  'cancelled',
  'superseded',
  'invalid_job',
] as const;
export type EpisodeEndCause = (typeof EPISODE_END_CAUSES)[number];

/** Guard for the `type` of a recorded step action. */
export function isEpisodeActionType(value: unknown): value is EpisodeActionType {
  return typeof value === 'string' && (EPISODE_ACTION_TYPES as readonly string[]).includes(value);
}
