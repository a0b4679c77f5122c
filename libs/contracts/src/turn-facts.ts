import { Type } from 'class-transformer';
import { IsOptional, ValidateNested } from 'class-validator';
import { GroupActorUpdatedPayload, ThreadIdlePayload, ThreadUpdatedPayload } from './attention.js';
import type { EventEnvelope } from './envelope.js';
import { EventKind } from './event-kinds.js';
import { TimerCancelledPayload, TimerScheduledPayload } from './timer-facts.js';

/*
 * The scheduler's other facts of one turn (one handled input), carried inside that turn's `decision.made` or
 * `event.transitioned` instead of as envelopes of their own (ADR-0024): the threads it changed or idled, the group
 * actor, the timers it set and cancelled. Each entry is exactly the payload the standalone kind has
 * (`thread.idle`, `thread.updated`, `group.actor.updated`, `timer.scheduled`, `timer.cancelled`), and
 * `unfoldTurn` turns a carrier back into those events, so the projector folds them with the same rules it folds
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

/**
 * The facts a `decision.made` or `event.transitioned` carries, as the standalone events they stand for, in the
 * order the scheduler published those before (idle threads, updated threads, the actor, timers). Each has the
 * carrier's group, time, source and causation; its id is the carrier's with a suffix (never stored as an event of
 * its own). Any other event, or a carrier without `turn`, unfolds to nothing.
 */
export function unfoldTurn(event: EventEnvelope): EventEnvelope[] {
  if (event.kind !== EventKind.DecisionMade && event.kind !== EventKind.EventTransitioned) return [];
  const turn = (event.payload as { turn?: SchedulerTurnFacts } | null)?.turn;
  if (!turn) return [];
  const out: EventEnvelope[] = [];
  const add = (kind: EventKind, payload: object, threadId?: string): void => {
    const fact: EventEnvelope = {
      ...event,
      id: `${event.id}/${out.length}`,
      kind,
      actorIds: [],
      evidenceMessageIds: [],
      payload,
    };
    delete fact.threadId;
    if (threadId !== undefined) fact.threadId = threadId;
    out.push(fact);
  };
  for (const p of turn.threadsIdle ?? []) add(EventKind.ThreadIdle, p, p.threadId);
  for (const p of turn.threads ?? []) add(EventKind.ThreadUpdated, p, p.threadId);
  if (turn.actor) add(EventKind.GroupActorUpdated, turn.actor);
  for (const p of turn.timersScheduled ?? []) add(EventKind.TimerScheduled, p);
  for (const p of turn.timersCancelled ?? []) add(EventKind.TimerCancelled, p);
  return out;
}
