import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
  validateSync,
} from 'class-validator';
import { plainToInstance } from 'class-transformer';
import type { EventEnvelope } from './envelope.js';
import { envelopeErrors, flattenValidationErrors } from './envelope.js';
import { ValidationFailed, type FieldError } from './errors.js';
import type { ContextMessage, MessagePayload } from './message.js';
import { RESUME_CAUSES, type ResumeCause } from './runtime.js';

/** Every BullMQ queue. Work, not facts: a job is something someone must do. */
export const QueueName = {
  /** Run (or continue) one episode (cognition). See `episodeJobId`. */
  Episodes: 'episodes',
  /** The life director's ticks (a BullMQ job scheduler). */
  LifeTicks: 'life-ticks',
  /** Optional utils-model detail for an activity that just started (life-director). */
  LifeDetails: 'life-details',
  /** Thread summaries and fact extraction, every N messages and when a thread goes idle (memory). */
  MemorySummaries: 'memory-summaries',
  /** Jargon meanings, retention and the periodic jargon scan (memory). */
  MemoryMaintenance: 'memory-maintenance',
} as const;
export type QueueName = (typeof QueueName)[keyof typeof QueueName];

/** A message as it appears in a prompt's context window (validated form of `ContextMessage`). */
export class ContextLine implements ContextMessage {
  @IsString()
  eventId!: string;

  @IsString()
  messageId!: string;

  @IsString()
  userId!: string;

  @IsString()
  displayName!: string;

  @IsString()
  text!: string;

  @IsInt()
  sentAt!: number;

  @IsBoolean()
  fromSelf!: boolean;
}

export class EpisodeResumeInfo {
  @IsIn(RESUME_CAUSES)
  cause!: ResumeCause;

  @IsOptional()
  @IsString()
  timerId?: string;

  @IsOptional()
  @IsString()
  toolCallId?: string;

  /** The `timer.fired` or `tool.result` event that woke the episode. */
  @IsString()
  eventId!: string;
}

/**
 * Messages a new episode took over from an earlier one it superseded (the same sender went on). Should that
 * episode have answered after all — its send committed just before the supersede — the new one leaves them out
 * (`Keyspace.episodeActed`), so nobody is answered twice.
 */
export class InheritedSubjects {
  @IsString()
  @MaxLength(128)
  episodeId!: string;

  @IsArray()
  @ArrayMaxSize(256)
  @IsString({ each: true })
  eventIds!: string[];
}

export const EPISODE_JOB_MODES = ['start', 'resume'] as const;
export type EpisodeJobMode = (typeof EPISODE_JOB_MODES)[number];

/** Dispatch lanes: a direct event never waits behind ambient work. */
export const DISPATCH_LANES = ['direct', 'ambient'] as const;
export type DispatchLane = (typeof DISPATCH_LANES)[number];

/**
 * The `episodes` job: run an episode from the start, or continue a persisted one after it waited. Built only
 * through `EpisodeJob.create()`, which validates, so an invalid job never exists (trigger and fragments are whole
 * envelopes, checked as the bus checks them).
 */
export class EpisodeJob {
  @IsString()
  @MaxLength(128)
  episodeId!: string;

  /** The group, `private:<user>` for a private chat; `null` only for episodes of no conversation. */
  @IsOptional()
  @IsString()
  groupId!: string | null;

  @IsOptional()
  @IsIn(EPISODE_JOB_MODES)
  mode?: EpisodeJobMode;

  /** The message the episode answers (with debounced fragments, the newest of them). */
  trigger!: EventEnvelope<MessagePayload>;

  /** Earlier fragments of the same sender and thread merged into this decision, oldest first. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(32)
  fragments?: EventEnvelope<MessagePayload>[];

  /** Fragments (by event id) taken over from superseded episodes, per episode. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(16)
  @ValidateNested({ each: true })
  @Type(() => InheritedSubjects)
  inherited?: InheritedSubjects[];

  /** The group's recent messages before the trigger, oldest first. */
  @IsArray()
  @ArrayMaxSize(200)
  @ValidateNested({ each: true })
  @Type(() => ContextLine)
  context!: ContextMessage[];

  /** Product time after which the episode must give up. */
  @IsISO8601()
  deadline!: string;

  /** The seq of the `episode.control` command this job was dispatched under (`start` = 1). */
  @IsOptional()
  @IsInt()
  @Min(1)
  controlSeq?: number;

  @IsOptional()
  @IsIn(DISPATCH_LANES)
  lane?: DispatchLane;

  /** mode `resume`: what woke it. */
  @IsOptional()
  @ValidateNested()
  @Type(() => EpisodeResumeInfo)
  resume?: EpisodeResumeInfo;

  /** Validate a plain job (as built, or as read back from BullMQ); throws `ValidationFailed` naming every field. */
  static create(plain: EpisodeJob): EpisodeJob {
    const errors = episodeJobErrors(plain);
    if (errors.length > 0) throw new ValidationFailed('episode job', errors);
    return plain;
  }
}

export function episodeJobErrors(plain: unknown): FieldError[] {
  if (typeof plain !== 'object' || plain === null) return [{ path: '', message: 'must be an object' }];
  const job = plain as EpisodeJob;
  const errors = flattenValidationErrors(validateSync(plainToInstance(EpisodeJob, job), { forbidUnknownValues: true }));
  const envelopes: [string, unknown][] = [['trigger', job.trigger]];
  (Array.isArray(job.fragments) ? job.fragments : []).forEach((f, i) => envelopes.push([`fragments[${i}]`, f]));
  for (const [path, envelope] of envelopes) {
    for (const error of envelopeErrors(envelope)) {
      errors.push({ path: error.path ? `${path}.${error.path}` : path, message: error.message });
    }
  }
  if (job.mode === 'resume' && job.resume === undefined)
    errors.push({ path: 'resume', message: 'required by mode resume' });
  return errors;
}

/** Deterministic ids: the same trigger always yields the same episode, the same step the same action. */
export function episodeIdFor(triggerEventId: string): string {
  return `ep_${triggerEventId}`;
}

export function actionIdFor(episodeId: string, step: number): string {
  return `act_${episodeId}_${step}`;
}

/**
 * The BullMQ job id of one run of an episode: the episode id for its start, `<episode>-r<seq>` for the
 * continuation dispatched with control command `seq`. A dispatch repeated after a crash adds the same job, which
 * BullMQ ignores. (BullMQ forbids `:` in custom ids.)
 */
export function episodeJobId(episodeId: string, mode: EpisodeJobMode = 'start', controlSeq = 1): string {
  return mode === 'start' ? episodeId : `${episodeId}-r${controlSeq}`;
}
