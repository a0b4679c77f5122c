import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { DelayedError, MetricsTime, UnrecoverableError, Worker, type Job, type Queue } from 'bullmq';
import { QueueName, ValidationFailed, type EpisodeJob } from '@app/contracts';
import { checkedEpisodeJob } from '@app/event-bus';
import { Metrics, QunliConfig } from '@app/platform';
import { EpisodeRunner, type EpisodeResult } from './episode.runner.js';

/**
 * The `episodes` worker: `QUNLI_COGNITION_CONCURRENCY` episodes at a time per process, any number of processes.
 * Jobs are validated (`checkedEpisodeJob`: what `EpisodeJob.create` checks, the fast way); an
 * invalid one fails for good. A process that dies loses its jobs' locks after `QUNLI_EPISODE_LOCK_MS` and another
 * process continues them from their last committed step. On SIGTERM the worker takes no new jobs and lets running ones finish for `QUNLI_SHUTDOWN_GRACE_MS`; after that
 * they stop at their next step boundary and are handed back to the queue for another process.
 */
@Injectable()
export class EpisodeProcessor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(EpisodeProcessor.name);
  private readonly handBack = new AbortController();
  private readonly invalidJobs;
  worker!: Worker<EpisodeJob, EpisodeResult>;

  constructor(
    private readonly runner: EpisodeRunner,
    private readonly config: QunliConfig,
    @InjectQueue(QueueName.Episodes) private readonly queue: Queue,
    metrics: Metrics,
  ) {
    metrics.contribute(() => queue.exportPrometheusMetrics({ app: 'cognition' }));
    this.invalidJobs = metrics.counter({
      name: 'qunli_episode_invalid_jobs_total',
      help: 'Episode jobs that failed validation (EpisodeJob.create) and were failed without running',
    });
  }

  onApplicationBootstrap(): void {
    // Jobs are taken only once the whole app is up.
    this.worker = new Worker<EpisodeJob, EpisodeResult>(QueueName.Episodes, (job, token) => this.process(job, token), {
      connection: this.queue.opts.connection,
      prefix: this.queue.opts.prefix,
      autorun: false,
      concurrency: this.config.QUNLI_COGNITION_CONCURRENCY,
      lockDuration: this.config.QUNLI_EPISODE_LOCK_MS,
      stalledInterval: this.config.QUNLI_EPISODE_LOCK_MS,
      maxStalledCount: 2,
      name: this.config.QUNLI_INSTANCE_ID,
      metrics: { maxDataPoints: MetricsTime.ONE_WEEK },
      removeOnComplete: { age: 86400, count: 10_000 },
      removeOnFail: { age: 7 * 86400 },
    });
    this.worker.on('error', (error) => this.logger.error(`episode worker: ${error.message}`));
    this.worker.run().catch((error: unknown) => this.logger.error(`episode worker stopped: ${String(error)}`));
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (!this.worker) return;
    const grace = setTimeout(() => this.handBack.abort(), this.config.QUNLI_SHUTDOWN_GRACE_MS);
    try {
      await this.worker.close();
    } finally {
      clearTimeout(grace);
    }
  }

  async process(job: Job<EpisodeJob>, token?: string): Promise<EpisodeResult> {
    let data: EpisodeJob;
    try {
      data = checkedEpisodeJob(job.data);
    } catch (error) {
      if (!(error instanceof ValidationFailed)) throw error;
      this.invalidJobs.inc();
      this.logger.warn(`episode job ${job.id ?? '?'} is invalid: ${error.message}`);
      throw new UnrecoverableError(error.message);
    }
    const result = await this.runner.run(data, job.attemptsMade + 1, this.handBack.signal);
    if (result.outcome === 'handed_back') {
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    return result;
  }
}
