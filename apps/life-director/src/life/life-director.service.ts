import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import {
  EventKind,
  makeEvent,
  PRIORITY,
  QueueName,
  type EventEnvelope,
  type PersonalActivityPayload,
} from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { Clock, Metrics, QunliConfig } from '@app/platform';
import { ActivityDetailJob } from './activity-detail.job.js';
import { planTick, type LifeChange, type TickPlan } from './life-line.rules.js';
import type { LifeScript } from './life-script.js';
import { LifeStateStore } from './life-state.store.js';

export const LIFE_SCRIPT = Symbol('LIFE_SCRIPT');
const SOURCE = 'life-director';

/**
 * The bot's life line (ADR-0001 §10): on every tick, walk the life script from the last tick to now and record
 * what happened as `personal.*` events. One identity has one life line, so the events belong to no group; groups
 * differ only in what the prompt section discloses. Only this director (and, later, operators) moves it.
 */
@Injectable()
export class LifeDirector {
  private readonly logger = new Logger(LifeDirector.name);
  private readonly ticks;
  private readonly skipped;

  constructor(
    private readonly eventLog: EventLog,
    private readonly state: LifeStateStore,
    @Inject(LIFE_SCRIPT) private readonly script: LifeScript,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
    @InjectQueue(QueueName.LifeDetails) private readonly details: Queue,
    metrics: Metrics,
  ) {
    this.ticks = metrics.counter({
      name: 'qunli_life_ticks_total',
      help: 'Life director ticks, by result (changed: events were recorded; unchanged: nothing new)',
      labelNames: ['result'],
    });
    this.skipped = metrics.counter({
      name: 'qunli_life_catchup_skipped_total',
      help: 'Activities passed over because they ended before the catch-up horizon (QUNLI_LIFE_CATCHUP_HOURS)',
    });
  }

  /**
   * Record what happened up to `now`. The new position commits in the same MULTI as the events, so a crash
   * before it records nothing and the next tick records it all once; a repeated tick records nothing.
   */
  async tick(now: Date = this.clock.now()): Promise<TickPlan> {
    const previous = await this.state.read();
    const plan = planTick(previous, this.script, now, this.config.QUNLI_LIFE_CATCHUP_HOURS * 3_600_000);
    const events: EventEnvelope[] = [];
    if (plan.agendaChanged) events.push(this.agendaEvent(now));
    for (const change of plan.changes) events.push(this.changeEvent(change, now));
    if (events.length > 0) {
      await this.eventLog.appendAll(events, (tx) => this.state.write(tx, plan.next));
      this.ticks.inc({ result: 'changed' });
    } else {
      await this.state.save(plan.next);
      this.ticks.inc({ result: 'unchanged' });
    }
    if (plan.skippedBeyondHorizon > 0) {
      this.skipped.inc(plan.skippedBeyondHorizon);
      this.logger.warn(`passed over ${plan.skippedBeyondHorizon} activities older than the catch-up horizon`);
    }
    await this.requestDetails(plan);
    return plan;
  }

  private async requestDetails(plan: TickPlan): Promise<void> {
    if (this.config.QUNLI_LIFE_DETAILS !== 'on' || this.config.llmOffline) return;
    for (const change of plan.changes) {
      if (change.kind !== 'started' || change.payload.activityId !== plan.next.current?.activityId) continue;
      const activity = this.script.activities.find((a) => a.title === change.payload.title);
      if (!activity?.detail) continue;
      // After the commit: a crash right here loses only an optional detail, never a beat.
      const job = ActivityDetailJob.create({
        activityId: change.payload.activityId,
        title: change.payload.title,
        description: change.payload.description,
      });
      await this.details.add('detail', job, {
        jobId: job.jobId(),
        attempts: 3,
        backoff: { type: 'exponential', delay: 2000 },
      });
    }
  }

  private agendaEvent(now: Date): EventEnvelope {
    const s = this.script;
    return makeEvent({
      kind: EventKind.PersonalAgendaLoaded,
      groupId: null,
      source: SOURCE,
      priority: PRIORITY.background,
      createdAt: now,
      payload: {
        personaId: s.personaId,
        scriptVersion: s.version,
        mood: s.mood,
        timezone: s.timezone,
        longTermGoals: s.goals.map((g) => ({ ...g })),
        milestones: s.milestones.map((m) => ({
          id: m.id,
          goalId: m.goal,
          title: m.title,
          afterSessions: m.afterSessions,
        })),
        defaultDisclosure: s.defaultDisclosure,
        groupDisclosure: { ...s.groupDisclosure },
      },
    });
  }

  private changeEvent(change: LifeChange, now: Date): EventEnvelope {
    const common = { groupId: null, source: SOURCE, priority: PRIORITY.background, createdAt: now } as const;
    if (change.kind === 'milestone') {
      this.logger.log(`milestone reached: ${change.milestone.title}`);
      return makeEvent({
        ...common,
        kind: EventKind.PersonalMilestoneReached,
        payload: {
          milestoneId: change.milestone.id,
          goalId: change.milestone.goal,
          title: change.milestone.title,
          activityId: change.activityId,
          at: change.at.toISOString(),
        },
      });
    }
    const kind = {
      started: EventKind.PersonalActivityStarted,
      beat: EventKind.PersonalActivityBeat,
      completed: EventKind.PersonalActivityCompleted,
    }[change.kind];
    if (change.kind === 'started') this.logger.log(`now: ${change.payload.title}`);
    return makeEvent({ ...common, kind, payload: change.payload satisfies PersonalActivityPayload });
  }
}
