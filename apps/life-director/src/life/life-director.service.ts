import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { EventKind, makeEvent, PRIORITY, type EventEnvelope, type PersonalActivityPayload } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { PersonaPolicy } from '@app/persona';
import { Clock, Metrics, REDIS } from '@app/platform';
import { currentActivity, planTick, type LifeState, type TickPlan } from './life.rules.js';

const SOURCE = 'life-director';

/**
 * The bot's life line (ADR §10): on every tick, follow the persona's daily routine and record what changed as
 * `personal.activity.*` events. One identity has one life line, so the events belong to no group.
 */
@Injectable()
export class LifeDirector {
  private readonly logger = new Logger(LifeDirector.name);
  private readonly ticks;
  private readonly badState;

  constructor(
    private readonly eventLog: EventLog,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly persona: PersonaPolicy,
    private readonly clock: Clock,
    metrics: Metrics,
  ) {
    this.ticks = metrics.counter({
      name: 'qunli_life_ticks_total',
      help: 'Life director ticks, by result (changed: events were recorded; unchanged: nothing new)',
      labelNames: ['result'],
    });
    this.badState = metrics.counter({
      name: 'qunli_life_state_unreadable_total',
      help: 'Ticks that found the stored life state unreadable and started over from the routine',
    });
  }

  /**
   * Record what happened in the life line up to `now`. Idempotent: a repeated tick finds the state the previous one
   * committed together with its events, and records nothing.
   */
  async tick(now: Date = this.clock.now()): Promise<TickPlan> {
    const keys = this.eventLog.keys;
    const partition = keys.partitionOf(null);
    const previous = this.readState(await this.redis.get(keys.lifeState(partition)));
    const plan = planTick(previous, currentActivity(this.persona.routine, now, this.persona.timezone));
    if (!plan.changed) {
      this.ticks.inc({ result: 'unchanged' });
      return plan;
    }
    const events: EventEnvelope[] = [];
    if (plan.completed) events.push(this.event(EventKind.PersonalActivityCompleted, plan.completed, now));
    if (plan.started) events.push(this.event(EventKind.PersonalActivityStarted, plan.started, now));
    for (const beat of plan.beats) events.push(this.event(EventKind.PersonalActivityBeat, beat, now));
    await this.eventLog.appendAll(events, (tx, p) => {
      if (plan.next) tx.set(keys.lifeState(p), JSON.stringify(plan.next));
      else tx.del(keys.lifeState(p));
    });
    this.ticks.inc({ result: 'changed' });
    if (plan.started) this.logger.log(`now: ${plan.started.title}`);
    return plan;
  }

  private readState(raw: string | null): LifeState | null {
    if (raw === null) return null;
    try {
      const state = JSON.parse(raw) as LifeState;
      if (typeof state.activityId === 'string' && typeof state.beatsTold === 'number') return state;
    } catch (error) {
      this.logger.error(`stored life state is not JSON (${(error as Error).message}); starting over from the routine`);
      this.badState.inc();
      return null;
    }
    this.logger.error('stored life state lacks activityId/beatsTold; starting over from the routine');
    this.badState.inc();
    return null;
  }

  private event(
    kind:
      | typeof EventKind.PersonalActivityStarted
      | typeof EventKind.PersonalActivityBeat
      | typeof EventKind.PersonalActivityCompleted,
    payload: PersonalActivityPayload,
    now: Date,
  ): EventEnvelope {
    return makeEvent({ kind, groupId: null, payload, source: SOURCE, priority: PRIORITY.background, createdAt: now });
  }
}
