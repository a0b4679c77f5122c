import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Counter } from 'prom-client';
import { Keyspace, QueueName } from '@app/contracts';
import { Clock, Metrics, QunliConfig, REDIS } from '@app/platform';
import { EpisodeControlStore } from '../episodes/episode-control.store.js';
import { EpisodeQueue } from '../episodes/episode.queue.js';
import { FairDispatchStore, type DispatchEntry, type DispatchLimits } from './fair-dispatch.store.js';

/** Real ms between safety polls (rate windows opening, offers heard by no one). */
const POLL_MS = 250;
/** A grant whose job or start was not written after this long (real ms) is written again. */
const SWEEP_AFTER_MS = 5000;
const GRANTS_PER_CALL = 32;

/**
 * Turns slots into running episodes. Every scheduler process runs one: it grants slots (`FairDispatchStore.grant`,
 * atomic and global, so the caps hold across processes), queues each granted run's BullMQ job and, for a start,
 * writes the `start` command. It runs when a handler offered or freed something (in-process, and via PUBLISH for the
 * other processes), every 250 ms, and sweeps grants whose job or start a crash left unwritten.
 */
@Injectable()
export class Dispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(Dispatcher.name);
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private subscriber: Redis | undefined;
  private jobEvents: QueueEvents | undefined;
  private jobEventsConnection: Redis | undefined;
  private stopped = false;
  private readonly grants: Counter<'lane'>;

  constructor(
    private readonly store: FairDispatchStore,
    private readonly queue: EpisodeQueue,
    private readonly control: EpisodeControlStore,
    private readonly config: QunliConfig,
    private readonly clock: Clock,
    private readonly keys: Keyspace,
    @Inject(REDIS) private readonly redis: Redis,
    metrics: Metrics,
  ) {
    this.grants = metrics.counter({
      name: 'qunli_dispatch_grants_total',
      help: 'Episode runs granted a slot by the fair dispatcher, by lane',
      labelNames: ['lane'],
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber = this.redis.duplicate({ connectionName: 'qunli-scheduler-dispatch-wake' });
    this.subscriber.on('message', () => this.kick());
    await this.subscriber.subscribe(this.keys.dispatchWakeChannel);
    // A finished job frees its slot at once, even while the group's lane is still busy with older events: the
    // lane's own release on `episode.completed` / `episode.waiting` later finds nothing to free.
    this.jobEventsConnection = this.redis.duplicate({
      connectionName: 'qunli-scheduler-job-events',
      enableAutoPipelining: false,
    });
    this.jobEvents = new QueueEvents(QueueName.Episodes, {
      connection: this.jobEventsConnection,
      prefix: this.keys.bullPrefix,
    });
    this.jobEvents.on('completed', ({ jobId }) => {
      void this.store
        .release(jobId)
        .then((freed) => (freed ? this.kick() : undefined))
        .catch((error: unknown) => this.fault('release after job completion failed', error));
    });
    this.timer = setInterval(() => {
      this.kick();
      void this.sweep().catch((error: unknown) => this.fault('sweep failed', error));
    }, POLL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.jobEvents?.close();
    this.jobEventsConnection?.disconnect();
    await this.running;
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect());
  }

  limits(): DispatchLimits {
    const c = this.config;
    return {
      now: this.clock.nowMs(),
      maxRunning: c.QUNLI_DISPATCH_MAX_RUNNING,
      maxAmbient: Math.min(c.QUNLI_DISPATCH_MAX_AMBIENT, c.QUNLI_DISPATCH_MAX_RUNNING),
      groupMaxRunning: c.QUNLI_DISPATCH_GROUP_MAX_RUNNING,
      groupStartsPerWindow: c.QUNLI_DISPATCH_GROUP_STARTS_PER_MINUTE,
      windowMs: 60_000,
      quantum: 1,
      maxGrants: GRANTS_PER_CALL,
    };
  }

  /** Grant what can be granted now; calls while a round runs make it run once more. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((error: unknown) => this.fault('dispatch failed', error))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Tell every scheduler process that a slot or an offer is new. */
  async wakeAll(): Promise<void> {
    await this.redis.publish(this.keys.dispatchWakeChannel, '1');
  }

  private async drain(): Promise<void> {
    for (;;) {
      const granted = await this.store.grant(this.limits());
      await Promise.all(granted.map((entry) => this.launch(entry)));
      if (granted.length < GRANTS_PER_CALL) return;
    }
  }

  private async launch(entry: DispatchEntry): Promise<void> {
    this.grants.inc({ lane: entry.lane });
    // Both idempotent and independent of each other (a worker may take the job before the start command is
    // written, which it tolerates): written side by side, one round trip instead of two on an @'s path.
    await Promise.all([
      this.queue.dispatch(entry.job, entry.priority),
      entry.mode === 'start'
        ? this.control.start(
            entry.groupId,
            {
              episodeId: entry.episodeId,
              command: 'start',
              seq: 1,
              reason: `start: granted a slot (${entry.lane} lane)`,
              eventIds: [entry.job.trigger.id, ...(entry.job.fragments ?? []).map((f) => f.id)],
            },
            this.clock.now(),
          )
        : undefined,
    ]);
    await this.store.started(entry.jobId);
  }

  private async sweep(): Promise<void> {
    for (const entry of await this.store.unstarted(SWEEP_AFTER_MS)) {
      this.logger.warn({ message: 'writing the job of a grant again', jobId: entry.jobId });
      await this.launch(entry);
    }
  }

  private fault(message: string, error: unknown): void {
    this.logger.error({ message, error: error instanceof Error ? error.message : String(error) });
  }
}
