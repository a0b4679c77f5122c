import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';
import { QueueName } from '@app/contracts';
import { MemoryErasure } from '@app/memory';
import { Clock, Metrics, QunliConfig } from '@app/platform';
import { JargonLearner } from './jargon-learner.service.js';
import { JargonMeaningsJob, JargonScanJob, ThreadSummaryJob } from './memory-jobs.js';
import { MemoryQueues } from './memory-queues.js';
import { ThreadSummarizer } from './thread-summarizer.service.js';

export const RETENTION_SCHEDULER = 'memory-retention';

/** Put a job off to a product instant (the next budget window) without spending an attempt. */
async function deferTo(job: Job, token: string | undefined, clock: Clock, until: Date): Promise<never> {
  await job.moveToDelayed(Date.now() + clock.realUntil(until), token);
  throw new DelayedError();
}

/** `memory-summaries`: thread summaries and fact extraction. */
@Processor(QueueName.MemorySummaries, { autorun: false, concurrency: 2 })
export class ThreadSummaryProcessor extends WorkerHost implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ThreadSummaryProcessor.name);

  constructor(
    private readonly summarizer: ThreadSummarizer,
    private readonly clock: Clock,
    queues: MemoryQueues,
    metrics: Metrics,
  ) {
    super();
    metrics.contribute(() => queues.summaries.exportPrometheusMetrics({ app: 'life-director' }));
  }

  onApplicationBootstrap(): void {
    this.worker.run().catch((error: unknown) => this.logger.error(`summary worker stopped: ${String(error)}`));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.close();
  }

  async process(job: Job, token?: string): Promise<{ outcome: string }> {
    const outcome = await this.summarizer.summarize(ThreadSummaryJob.create(job.data as ThreadSummaryJob));
    if (outcome.kind === 'deferred') return deferTo(job, token, this.clock, outcome.until);
    // The return value stays in Redis with the job: counts only, never text from the chat.
    return { outcome: outcome.kind === 'skipped' ? `skipped:${outcome.reason}` : `written:${outcome.facts}` };
  }
}

/** `memory-maintenance`: jargon scans and meanings, retention. */
@Processor(QueueName.MemoryMaintenance, { autorun: false, concurrency: 1 })
export class MemoryMaintenanceProcessor
  extends WorkerHost
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(MemoryMaintenanceProcessor.name);

  constructor(
    private readonly jargon: JargonLearner,
    private readonly erasure: MemoryErasure,
    private readonly queues: MemoryQueues,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
    metrics: Metrics,
  ) {
    super();
    metrics.contribute(() => queues.maintenance.exportPrometheusMetrics({ app: 'life-director' }));
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.QUNLI_MEMORY_RETENTION_DAYS > 0) {
      const every = Math.max(1000, Math.round(this.clock.real(86_400_000)));
      await this.queues.maintenance.upsertJobScheduler(RETENTION_SCHEDULER, { every }, { name: 'retention' });
    } else {
      await this.queues.maintenance.removeJobScheduler(RETENTION_SCHEDULER);
    }
    this.worker.run().catch((error: unknown) => this.logger.error(`maintenance worker stopped: ${String(error)}`));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.close();
  }

  async process(job: Job, token?: string): Promise<Record<string, unknown>> {
    switch (job.name) {
      case 'jargon-scan':
        // A job a worker runs always has its id; the scan names its meanings job after it.
        return {
          candidates: (await this.jargon.scan(JargonScanJob.create(job.data as JargonScanJob), String(job.id))).length,
        };
      case 'jargon-meanings':
      case 'jargon-meaning': {
        const data = job.data as Record<string, unknown>;
        const batch =
          job.name === 'jargon-meaning' ? JargonMeaningsJob.fromSingle(data) : JargonMeaningsJob.create(data as never);
        const result = await this.jargon.judge(batch);
        if (result.deferredUntil) return deferTo(job, token, this.clock, result.deferredUntil);
        return { status: result.status ?? 'done' };
      }
      case 'retention': {
        const before = new Date(this.clock.nowMs() - this.config.QUNLI_MEMORY_RETENTION_DAYS * 86_400_000);
        const report = await this.erasure.applyRetention(before);
        return { events: report.events };
      }
      default:
        throw new Error(`MEMORY.UNKNOWN_JOB: ${job.name}`);
    }
  }
}
