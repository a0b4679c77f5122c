import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { ErrorInfo } from './payloads.js';
import { TIMER_PURPOSES, type TimerPurpose } from './timer-facts.js';

/*
 * The contracts between the fast plane (scheduler) and the slow plane (cognition) beyond "run this episode":
 * durable timers, episode control, episodes that wait, and results of asynchronous tools. Runtime-spine issue.
 *
 * How they flow:
 *   - The scheduler sets durable timers in the same commit as the state that needs them; when one is due it
 *     comes back as `timer.fired` in the group's own partition, so the group's order holds.
 *   - The scheduler tells a running or waiting episode what to do with `episode.control` (a fact in the log) and,
 *     in the same commit, writes the command to the episode's control record (`Keyspace.episodeControl`) and
 *     publishes it on `Keyspace.episodeControlChannel`. A worker applies commands in `seq` order, each once.
 *   - An episode that must wait (`wait` action, or an asynchronous tool) appends `episode.waiting` and ends its
 *     job; the scheduler sets the timer (wait) or a timeout timer (tool). `timer.fired` or `tool.result` then makes
 *     the scheduler send `resume` and enqueue a continuation job, which any worker can pick up.
 */

export { TIMER_PURPOSES, type TimerPurpose } from './timer-facts.js';

/** `timer.fired`: a durable timer came due. Appended to the partition of `groupId`, once per timer id. */
export class TimerFiredPayload {
  /** Deterministic per (purpose, subject), so setting the same timer twice is one timer. */
  @IsString()
  @MaxLength(200)
  timerId!: string;

  @IsIn(TIMER_PURPOSES)
  purpose!: TimerPurpose;

  /** The event the timer is about (notBefore, deadline, snooze, debounce, retry). */
  @IsOptional()
  @IsString()
  subjectEventId?: string;

  /** The episode the timer is about (episode_wait, tool_timeout). */
  @IsOptional()
  @IsString()
  episodeId?: string;

  /** Product time the timer was due. */
  @IsISO8601()
  dueAt!: string;

  /** Product time it was set. */
  @IsISO8601()
  setAt!: string;

  /** Whatever the setter needs back (small). */
  @IsOptional()
  @IsObject()
  data?: Record<string, unknown>;
}

export { TimerCancelledPayload, TimerScheduledPayload } from './timer-facts.js';

export const EPISODE_COMMANDS = ['start', 'supersede', 'interrupt', 'cancel', 'resume'] as const;
/**
 * - `start`: the episode was dispatched (its job is queued).
 * - `supersede`: a newer episode takes over (it carries this one's evidence); stop without acting.
 * - `interrupt`: new messages arrived for the group while it thinks; abort the in-flight LLM request, take the
 *   messages in (`eventIds`) and plan again (cognition caps consecutive interrupts).
 * - `cancel`: stop without acting (its trigger was recalled, its deadline passed, an operator said so).
 * - `resume`: a waiting episode continues (`cause` says why); a continuation job is queued with it.
 */
export type EpisodeCommand = (typeof EPISODE_COMMANDS)[number];

export const RESUME_CAUSES = ['timer', 'tool_result'] as const;
export type ResumeCause = (typeof RESUME_CAUSES)[number];

/** `episode.control`: the scheduler told an episode what to do. Applied by cognition once per (episodeId, seq). */
export class EpisodeControlPayload {
  @IsString()
  episodeId!: string;

  @IsIn(EPISODE_COMMANDS)
  command!: EpisodeCommand;

  /** 1, 2, 3… per episode: a worker applies each command once and in order, and ignores older ones. */
  @IsInt()
  @Min(1)
  seq!: number;

  /** One line a person can read: "superseded: the sender went on typing". */
  @IsString()
  @MaxLength(500)
  reason!: string;

  /**
   * interrupt: every message event the episode must take in beyond its job, cumulative (the newest interrupt
   * names all of them, so a worker that reads only the record's `latest` misses none); supersede: the events the
   * successor carries over; start: the events the episode is about.
   */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(256)
  eventIds?: string[];

  /** supersede: the episode that takes over. */
  @IsOptional()
  @IsString()
  supersededBy?: string;

  /** resume: why. */
  @IsOptional()
  @IsIn(RESUME_CAUSES)
  cause?: ResumeCause;

  /** resume after a timer. */
  @IsOptional()
  @IsString()
  timerId?: string;

  /** resume after a tool result. */
  @IsOptional()
  @IsString()
  toolCallId?: string;
}

/** The durable control record of one episode, as cognition reads it (`Keyspace.episodeControl`). */
export interface EpisodeControlRecord {
  /** The newest command's seq. */
  seq: number;
  /** The newest command. */
  latest: EpisodeControlPayload;
  /** Set once a `cancel` or `supersede` was sent: the episode must never act again. */
  stopped: boolean;
}

export const WAIT_CAUSES = ['wait', 'tool'] as const;
export type WaitCause = (typeof WAIT_CAUSES)[number];

/**
 * `episode.waiting`: an episode parked itself (its job ended; its state and steps are persisted). The scheduler
 * sets a durable timer for `resumeAt` (wait) or for `timeoutAt` (tool) and frees the episode's concurrency slot.
 */
export class EpisodeWaitingPayload {
  @IsString()
  episodeId!: string;

  @IsString()
  triggerEventId!: string;

  @IsIn(WAIT_CAUSES)
  cause!: WaitCause;

  /** The step that parked it (0-based). */
  @IsInt()
  @Min(0)
  step!: number;

  /** wait: product time to resume at. */
  @IsOptional()
  @IsISO8601()
  resumeAt?: string;

  /** tool: the call awaiting a `tool.result`. */
  @IsOptional()
  @IsString()
  toolCallId?: string;

  /** tool: product time after which the call counts as timed out (a `tool_timeout` timer resumes it). */
  @IsOptional()
  @IsISO8601()
  timeoutAt?: string;

  /** The episode's own deadline (product time); past it, a resume ends it instead. */
  @IsISO8601()
  deadline!: string;
}

/** `tool.result`: an asynchronous tool call finished (or failed). Appended to the episode's group partition. */
export class ToolResultPayload {
  @IsString()
  episodeId!: string;

  @IsString()
  @MaxLength(200)
  toolCallId!: string;

  @IsString()
  @MaxLength(64)
  tool!: string;

  @IsBoolean()
  ok!: boolean;

  /** What the model will see, already capped to the tool's result size; data, never instructions. */
  @IsString()
  @MaxLength(20_000)
  text!: string;

  @IsOptional()
  @IsObject()
  data?: Record<string, unknown>;

  @IsOptional()
  @ValidateNested()
  @Type(() => ErrorInfo)
  error?: ErrorInfo;

  @IsInt()
  @Min(0)
  latencyMs!: number;
}

/** `message.recalled`: someone withdrew a message (OneBot `group_recall` / `friend_recall` notice). */
export class MessageRecalledPayload {
  @IsIn(['group', 'private'])
  messageType!: 'group' | 'private';

  @IsString()
  selfId!: string;

  /** OneBot `message_id` of the withdrawn message. */
  @IsString()
  messageId!: string;

  /** Who wrote it. */
  @IsString()
  userId!: string;

  /** Who withdrew it (an admin may recall another's message). */
  @IsString()
  operatorId!: string;

  /** OneBot `time` (epoch seconds). */
  @IsInt()
  recalledAt!: number;

  /**
   * The event that carried the withdrawn message, when ingress still remembers it (`QUNLI_INGRESS_DEDUP_SECONDS`).
   * Outbound drops a queued reply whose `triggerEventId` is this; the scheduler drops a pending decision about it.
   */
  @IsOptional()
  @IsString()
  eventId?: string;
}
