import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Counter } from 'prom-client';
import type { PartitionTask } from '@app/event-bus';
import { Clock, Metrics, QunliConfig } from '@app/platform';
import { TimerStore } from './timer.store.js';

const BATCH = 200;

/**
 * Fires the durable timers of the partitions this scheduler owns (a `PartitionTask`: it starts and stops with the
 * partition's lease). Every `QUNLI_TIMER_POLL_MS` it takes the timers due by the product clock and fires them as
 * `timer.fired` (see `TimerStore.fire`), so a timer fires within one poll of its due time, after a restart or a
 * takeover too (overdue timers fire at once), and exactly once even if two owners overlap for a moment.
 */
@Injectable()
export class TimerWheel implements PartitionTask {
  private readonly logger = new Logger(TimerWheel.name);
  private readonly loops = new Map<number, { running: boolean; done: Promise<void> }>();
  private readonly fired: Counter<'purpose'>;
  /** One beat for every partition's loop: their polls leave in the same tick, so in one write to Redis. */
  private beat: Promise<void> | undefined;

  constructor(
    private readonly timers: TimerStore,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
    metrics: Metrics,
  ) {
    this.fired = metrics.counter({
      name: 'qunli_timers_fired_total',
      help: 'Durable timers fired as timer.fired events, by purpose',
      labelNames: ['purpose'],
    });
  }

  start(partition: number): Promise<void> {
    if (this.loops.has(partition)) return Promise.resolve();
    const loop = { running: true, done: Promise.resolve() };
    loop.done = this.run(partition, loop);
    this.loops.set(partition, loop);
    return Promise.resolve();
  }

  async stop(partition: number): Promise<void> {
    const loop = this.loops.get(partition);
    if (!loop) return;
    loop.running = false;
    this.loops.delete(partition);
    await loop.done;
  }

  private async run(partition: number, loop: { running: boolean }): Promise<void> {
    while (loop.running) {
      try {
        let fired = BATCH;
        while (loop.running && fired >= BATCH) fired = await this.tick(partition);
      } catch (error) {
        this.logger.error({ message: 'timer poll failed', partition, error: String(error) });
      }
      await this.nextBeat();
    }
  }

  private nextBeat(): Promise<void> {
    return (this.beat ??= sleep(this.config.QUNLI_TIMER_POLL_MS).then(() => {
      this.beat = undefined;
    }));
  }

  /** Fire what is due now in one partition; resolves to how many were due. */
  async tick(partition: number): Promise<number> {
    const now = this.clock.nowMs();
    const due = await this.timers.due(partition, now, BATCH);
    if (due.length === 0) return 0;
    const stored = await this.timers.load(
      partition,
      due.map((d) => d.timerId),
    );
    const batch = [];
    for (let i = 0; i < due.length; i++) {
      const timer = stored[i];
      if (!timer) {
        await this.timers.drop(partition, due[i]!.timerId);
        continue;
      }
      batch.push({ due: due[i]!, event: TimerStore.firedEvent(timer, this.clock.now()), purpose: timer.purpose });
    }
    await this.timers.fire(partition, batch);
    for (const { purpose } of batch) this.fired.inc({ purpose });
    return due.length;
  }
}
