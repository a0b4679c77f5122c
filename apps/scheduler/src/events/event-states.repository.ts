import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { EventState } from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { REDIS } from '@app/platform';
import { EventRecord, isTerminal } from './event-state.machine.js';

interface StoredState {
  state: EventState;
  seq: number;
}

/**
 * Where the scheduler keeps the state of events still in flight (deliberating, snoozed…): a hash per partition.
 * Terminal events leave it; their history lives in the log and the `events` read model.
 */
@Injectable()
export class EventStates {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  async load(ctx: StreamContext, eventId: string): Promise<EventRecord | undefined> {
    const raw = await this.redis.hget(ctx.keys.eventStates(ctx.partition), eventId);
    if (raw === null) return undefined;
    const stored = JSON.parse(raw) as StoredState;
    return new EventRecord(eventId, stored.state, stored.seq);
  }

  /** Write (or, for a terminal state, drop) the event's state in the handler's commit. */
  stage(ctx: StreamContext, eventId: string, state: EventState, seq: number): void {
    const key = ctx.keys.eventStates(ctx.partition);
    if (isTerminal(state)) ctx.stage('HDEL', [key], eventId);
    else ctx.stage('HSET', [key], eventId, JSON.stringify({ state, seq } satisfies StoredState));
  }
}
