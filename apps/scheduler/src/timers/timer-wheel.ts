import { Injectable, Logger } from '@nestjs/common';
import type { Counter } from 'prom-client';
import type { PartitionTask } from '@app/event-bus';
import { Clock, Metrics, QunliConfig } from '@app/platform';
import { TimerStore } from './timer.store.js';

const BATCH = 200;

/** The longest (real ms) a partition's wheel sleeps without polling, whatever it knows of: see `rest`. */
export const TIMER_SWEEP_MS = 1000;

/**
 * The most product time an ordinary timer may fire late to wait for the shared beat (ADR 0046). At scale 1 the beat
 * (`QUNLI_TIMER_POLL_MS`, 100 ms) is well inside it; a compressed clock that would stretch the beat past it (a
 * scale above 2.5 with the default beat) wakes for each timer's due time, so a replay's timing means what it says.
 */
export const BEAT_SLACK_PRODUCT_MS = 250;

/** One owned partition's loop. */
interface Loop {
  running: boolean;
  done: Promise<void>;
  /** Product ms of the earliest timer this loop knows of (Infinity: none). */
  nextDue: number;
  /** Due times heard of (`TimerStore.onSet`) while a poll was running: the poll may have read before they landed. */
  heard: number;
  /** Product ms of the earliest urgent timer (`TimerSpec.urgent`) this process set and the loop has not fired. */
  urgentDue: number;
  /** Urgent due times heard of while a poll was running. */
  heardUrgent: number;
  polling: boolean;
  /** Real ms (performance.now) the last poll started. */
  polledAt: number;
  /** Set while the loop sleeps: ends the sleep early, or sets it again for an earlier timer. */
  sleep?: { timer: NodeJS.Timeout; end: () => void };
}

/**
 * Fires the durable timers of the partitions this scheduler owns (a `PartitionTask`: it starts and stops with the
 * partition's lease). Each partition's loop takes the timers due by the product clock and fires them as
 * `timer.fired` (see `TimerStore.fire`), then sleeps until the earliest timer it knows of: the one its poll saw
 * next, or one this process set since (`TimerStore.onSet`, after the commit that set it). It wakes on a beat all
 * loops share (a multiple of `QUNLI_TIMER_POLL_MS`), so the polls of many partitions leave in one write and the
 * timers they fire start their turns together: an ordinary timer fires at the first beat after it is due, an urgent
 * one (an @'s debounce) at its due time (ADR 0046). Two polls of a partition are at least `QUNLI_TIMER_POLL_MS`
 * apart, so a busy partition fires its timers in batches, and about `TIMER_SWEEP_MS` apart at most, so a timer some
 * other process set (a previous owner's last commit during a takeover) fires within a second too. An idle
 * partition costs one poll a second instead of one per poll interval. After a restart or takeover overdue timers
 * fire at once, and each fires exactly once even if two owners overlap.
 */
@Injectable()
export class TimerWheel implements PartitionTask {
  private readonly logger = new Logger(TimerWheel.name);
  private readonly loops = new Map<number, Loop>();
  private readonly fired: Counter<'purpose'>;

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
    timers.onSet((partition, dueAt, urgent) => this.heardOf(partition, dueAt, urgent));
  }

  start(partition: number): Promise<void> {
    if (this.loops.has(partition)) return Promise.resolve();
    const loop: Loop = {
      running: true,
      done: Promise.resolve(),
      nextDue: Number.POSITIVE_INFINITY,
      heard: Number.POSITIVE_INFINITY,
      urgentDue: Number.POSITIVE_INFINITY,
      heardUrgent: Number.POSITIVE_INFINITY,
      polling: false,
      polledAt: Number.NEGATIVE_INFINITY,
    };
    loop.done = this.run(partition, loop);
    this.loops.set(partition, loop);
    return Promise.resolve();
  }

  async stop(partition: number): Promise<void> {
    const loop = this.loops.get(partition);
    if (!loop) return;
    loop.running = false;
    this.loops.delete(partition);
    loop.sleep?.end();
    await loop.done;
  }

  private async run(partition: number, loop: Loop): Promise<void> {
    while (loop.running) {
      loop.polling = true;
      loop.polledAt = performance.now();
      const pollFrom = this.clock.nowMs();
      let next: number | null = null;
      try {
        let poll: { due: number; next: number | null };
        do poll = await this.tick(partition);
        while (loop.running && poll.due >= BATCH);
        next = poll.next;
      } catch (error) {
        this.logger.error({ message: 'timer poll failed', partition, error: String(error) });
      }
      loop.polling = false;
      loop.nextDue = Math.min(next ?? Number.POSITIVE_INFINITY, loop.heard);
      loop.heard = Number.POSITIVE_INFINITY;
      // An urgent timer due by the time the poll began has fired (or was cancelled); a later one is still waited for.
      if (loop.urgentDue <= pollFrom) loop.urgentDue = Number.POSITIVE_INFINITY;
      loop.urgentDue = Math.min(loop.urgentDue, loop.heardUrgent);
      loop.heardUrgent = Number.POSITIVE_INFINITY;
      if (loop.running) await this.rest(loop);
    }
  }

  /** Sleep until the next poll is due: see the class comment. */
  private rest(loop: Loop): Promise<void> {
    return new Promise((resolve) => {
      const end = () => {
        if (loop.sleep) clearTimeout(loop.sleep.timer);
        loop.sleep = undefined;
        resolve();
      };
      loop.sleep = { timer: setTimeout(end, this.restMs(loop)), end };
    });
  }

  private restMs(loop: Loop): number {
    const now = performance.now();
    const gap = this.config.QUNLI_TIMER_POLL_MS;
    const sweepAt = loop.polledAt + Math.max(TIMER_SWEEP_MS, gap);
    const earliest = loop.polledAt + gap;
    const dueAt = now + this.untilDue(loop.nextDue);
    // Held back by the gap, waiting for the sweep, or for an ordinary timer: wake on the shared beat (a multiple of
    // the gap), so the loops of all partitions poll in the same tick and one write to Redis (ADR 0006's single beat),
    // and the timers they fire start their turns together (ADR 0046).
    const beatAt = Math.ceil(Math.min(Math.max(dueAt, earliest), sweepAt) / gap) * gap;
    // A timer someone waits on (an @'s debounce) wakes the loop at its due time; so does every timer when one beat
    // is too long for the clock's scale.
    const preciseAt = this.beatSlackOk(gap) ? now + this.untilDue(loop.urgentDue) : dueAt;
    if (preciseAt >= earliest && preciseAt < Math.min(sweepAt, beatAt)) return Math.max(0, preciseAt - now);
    return Math.max(0, beatAt - now);
  }

  /**
   * Real ms from now until `dueAt` (product ms), 2 ms late on purpose: a timer may end a millisecond early by the
   * wall clock, and a poll that early would find nothing due and wait a whole poll interval.
   */
  private untilDue(dueAt: number): number {
    return Number.isFinite(dueAt) ? this.clock.real(dueAt - this.clock.nowMs()) + 2 : Number.POSITIVE_INFINITY;
  }

  /** May ordinary timers wait for the beat: is one beat within `BEAT_SLACK_PRODUCT_MS` of product time? */
  private beatSlackOk(gap: number): boolean {
    return gap * this.clock.scale <= BEAT_SLACK_PRODUCT_MS;
  }

  /** A timer this process set on `partition`, due at `dueAt` (product ms), has been committed. */
  private heardOf(partition: number, dueAt: number, urgent: boolean): void {
    const loop = this.loops.get(partition);
    if (!loop?.running) return;
    if (loop.polling) {
      loop.heard = Math.min(loop.heard, dueAt);
      if (urgent) loop.heardUrgent = Math.min(loop.heardUrgent, dueAt);
      return;
    }
    const earlierUrgent = urgent && dueAt < loop.urgentDue;
    if (dueAt >= loop.nextDue && !earlierUrgent) return;
    loop.nextDue = Math.min(loop.nextDue, dueAt);
    if (urgent) loop.urgentDue = Math.min(loop.urgentDue, dueAt);
    if (loop.sleep) {
      clearTimeout(loop.sleep.timer);
      loop.sleep.timer = setTimeout(loop.sleep.end, this.restMs(loop));
    }
  }

  /** Fire what is due now in one partition; resolves to how many were due and when the next one is. */
  async tick(partition: number): Promise<{ due: number; next: number | null }> {
    const now = this.clock.nowMs();
    const { due, next } = await this.timers.due(partition, now, BATCH);
    if (due.length === 0) return { due: 0, next };
    const batch = [];
    for (const item of due) {
      if (!item.timer) {
        await this.timers.drop(partition, item.timerId);
        continue;
      }
      batch.push({
        due: item,
        event: TimerStore.firedEvent(item.timer, this.clock.now()),
        purpose: item.timer.purpose,
      });
    }
    await this.timers.fire(partition, batch);
    for (const { purpose } of batch) this.fired.inc({ purpose });
    return { due: due.length, next };
  }
}
