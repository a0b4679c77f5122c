import { Injectable } from '@nestjs/common';
import { ConsumerGroup } from '@app/contracts';
import { GroupCommit, type BatchEntry, type BatchHandler } from '@app/event-bus';
import { Metrics } from '@app/platform';
import { ProjectionRepository } from './projection.repository.js';

/** Projection lag spans milliseconds (steady state) to minutes (catching up after an outage). */
const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const BATCH_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Least real time between the starts of two of this process's projection transactions (batches arriving meanwhile share one). */
export const PROJECTOR_COMMIT_INTERVAL_MS = 20;
/**
 * Projection transactions in flight at once: when the log comes faster than one transaction stream can write it,
 * Postgres works on several (their rows are locked in key order, so they never deadlock).
 */
const PROJECTOR_COMMIT_CONCURRENCY = 4;
/** Entries one transaction takes at most from the batches waiting (a larger single batch is still taken whole). */
const PROJECTOR_COMMIT_MAX_ENTRIES = 5000;

/**
 * The projector consumer group's handler: the batches of this process's partition readers go to Postgres together,
 * in shared transactions (archive, read models, checkpoints): at most one started per `PROJECTOR_COMMIT_INTERVAL_MS`
 * and `PROJECTOR_COMMIT_CONCURRENCY` in flight
 * (`GroupCommit`). Idempotent by event id, as the bus requires.
 */
@Injectable()
export class ProjectorService implements BatchHandler {
  readonly name = ConsumerGroup.Projector;
  private readonly eventsTotal;
  private readonly batchSeconds;
  private readonly lagSeconds;
  private readonly commits = new GroupCommit<BatchEntry>({
    write: (entries) => this.project(entries),
    intervalMs: PROJECTOR_COMMIT_INTERVAL_MS,
    concurrency: PROJECTOR_COMMIT_CONCURRENCY,
    maxItems: PROJECTOR_COMMIT_MAX_ENTRIES,
  });

  constructor(
    private readonly repository: ProjectionRepository,
    metrics: Metrics,
  ) {
    this.eventsTotal = metrics.counter({
      name: 'qunli_projection_events_total',
      help: 'Events archived and folded into the read models, by kind (redeliveries not counted)',
      labelNames: ['kind'],
    });
    this.batchSeconds = metrics.histogram({
      name: 'qunli_projection_batch_seconds',
      help: 'Time to project one batch (one Postgres transaction)',
      buckets: BATCH_BUCKETS,
    });
    this.lagSeconds = metrics.histogram({
      name: 'qunli_projection_lag_seconds',
      help: 'From an event being created to its projection committing',
      buckets: LAG_BUCKETS,
    });
  }

  handleBatch(entries: BatchEntry[]): Promise<void> {
    return this.commits.submit(entries);
  }

  private async project(entries: BatchEntry[]): Promise<void> {
    const stopTimer = this.batchSeconds.startTimer();
    const { applied, committedAt } = await this.repository.project(this.name, entries);
    stopTimer();
    const committed = committedAt.getTime();
    const perKind = new Map<string, number>();
    for (const event of applied) {
      perKind.set(event.kind, (perKind.get(event.kind) ?? 0) + 1);
      this.lagSeconds.observe(Math.max(0, committed - Date.parse(event.createdAt)) / 1000);
    }
    for (const [kind, count] of perKind) this.eventsTotal.inc({ kind }, count);
  }
}
