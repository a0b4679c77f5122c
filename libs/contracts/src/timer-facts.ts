import { IsIn, IsISO8601, IsOptional, IsString, MaxLength } from 'class-validator';

/*
 * Durable timers' purposes and the scheduler's facts about setting and cancelling them. Their own module (re-exported
 * by `runtime.ts`) so that `turn-facts.ts`, which `payloads.ts` imports, depends on no module that imports
 * `payloads.ts` back.
 */

/** What a durable timer is for. The scheduler owns them all; others ask for one through an event. */
export const TIMER_PURPOSES = [
  /** An event may not be handled before `notBefore`. */
  'not_before',
  /** An event past its deadline ends as `expired`. */
  'deadline',
  /** A snoozed event is looked at again. */
  'snooze',
  /** A failed step is tried again. */
  'retry',
  /** One sender's quiet period in a thread is over: its fragments become one decision. */
  'debounce',
  /** An episode's `wait(seconds)` is over. */
  'episode_wait',
  /** An asynchronous tool did not answer in time. */
  'tool_timeout',
  /** A thread has been quiet long enough to be idle. */
  'thread_idle',
  /** A group's cooldown is over. */
  'cooldown',
] as const;
export type TimerPurpose = (typeof TIMER_PURPOSES)[number];

/** `timer.scheduled`: the scheduler set (or moved) a durable timer, in the commit of the state that needs it. */
export class TimerScheduledPayload {
  @IsString()
  @MaxLength(200)
  timerId!: string;

  @IsIn(TIMER_PURPOSES)
  purpose!: TimerPurpose;

  @IsOptional()
  @IsString()
  subjectEventId?: string;

  @IsOptional()
  @IsString()
  episodeId?: string;

  /** Product time it is due. Setting the same timer id again moves it. */
  @IsISO8601()
  dueAt!: string;

  /**
   * Product time it was set, when that is not the time of the event carrying this record: a turn published later
   * than it happened (ADR 0033). Absent: the carrier's `createdAt`.
   */
  @IsOptional()
  @IsISO8601()
  setAt?: string;
}

/** `timer.cancelled`: a durable timer will not fire (its reason is gone: the batch closed, the episode ended…). */
export class TimerCancelledPayload {
  @IsString()
  @MaxLength(200)
  timerId!: string;

  @IsIn(TIMER_PURPOSES)
  purpose!: TimerPurpose;

  @IsString()
  @MaxLength(500)
  reason!: string;
}
