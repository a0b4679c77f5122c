import type { EventEnvelope } from './envelope.js';
import { EventKind } from './event-kinds.js';
import type { SchedulerTurnFacts } from './turn-facts.js';

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
