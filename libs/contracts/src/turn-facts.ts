import { Type } from 'class-transformer';
import { IsOptional, ValidateNested } from 'class-validator';
import { GroupActorUpdatedPayload, ThreadIdlePayload, ThreadUpdatedPayload } from './attention.js';
import { TimerCancelledPayload, TimerScheduledPayload } from './timer-facts.js';

/*
 * The scheduler's other facts of one turn (one handled input), carried inside that turn's `decision.made` or
 * `event.transitioned` instead of as envelopes of their own (ADR-0024): the threads it changed or idled, the group
 * actor, the timers it set and cancelled. Each entry is exactly the payload the standalone kind has
 * (`thread.idle`, `thread.updated`, `group.actor.updated`, `timer.scheduled`, `timer.cancelled`), and
 * `unfoldTurn` (`unfold-turn.ts`) turns a carrier back into those events, so the projector folds them with the same rules it folds
 * the standalone kinds with (which it still reads, for logs written before and for turns with no carrier).
 */

export class SchedulerTurnFacts {
  /** Threads that went idle this turn, in the order they did (`thread.idle`). */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => ThreadIdlePayload)
  threadsIdle?: ThreadIdlePayload[];

  /** The newest snapshot of each live thread the turn changed (`thread.updated`). */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => ThreadUpdatedPayload)
  threads?: ThreadUpdatedPayload[];

  /** The group actor, when a reply or an ambient episode changed it (`group.actor.updated`). */
  @IsOptional()
  @ValidateNested()
  @Type(() => GroupActorUpdatedPayload)
  actor?: GroupActorUpdatedPayload;

  /** Timers set (or moved) this turn, net of any set and cancelled in it (`timer.scheduled`). */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => TimerScheduledPayload)
  timersScheduled?: TimerScheduledPayload[];

  /** Live timers the turn cancelled (`timer.cancelled`). */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => TimerCancelledPayload)
  timersCancelled?: TimerCancelledPayload[];
}

/** True when the turn has no fact to carry. */
export function isEmptyTurn(turn: SchedulerTurnFacts): boolean {
  return (
    !turn.threadsIdle?.length &&
    !turn.threads?.length &&
    turn.actor === undefined &&
    !turn.timersScheduled?.length &&
    !turn.timersCancelled?.length
  );
}
