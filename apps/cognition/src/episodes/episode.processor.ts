import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { MetricsTime, type Job, type Queue } from 'bullmq';
import { QueueName, type EpisodeJob } from '@app/contracts';
import { Metrics, QunliConfig } from '@app/platform';
import { EpisodeRunner, type EpisodeResult } from './episode.runner.js';

/**
 * Takes episode jobs from the `episodes` queue (enqueued by the scheduler, job id = episode id) and runs them,
 * `QUNLI_COGNITION_CONCURRENCY` at a time. A job completes whatever the model did; it fails, and BullMQ retries it,
 * only when the runner could not record the outcome (Redis down).
 */
@Processor(QueueName.Episodes, {
  autorun: false,
  metrics: { maxDataPoints: MetricsTime.ONE_WEEK },
  removeOnComplete: { age: 86400, count: 10_000 },
  removeOnFail: { age: 7 * 86400 },
})
export class EpisodeProcessor extends WorkerHost implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(EpisodeProcessor.name);

  constructor(
    private readonly runner: EpisodeRunner,
    private readonly config: QunliConfig,
    @InjectQueue(QueueName.Episodes) queue: Queue,
    metrics: Metrics,
  ) {
    super();
    metrics.contribute(() => queue.exportPrometheusMetrics({ app: 'cognition' }));
  }

  onApplicationBootstrap(): void {
    // Concurrency comes from the validated config, which decorator options cannot see; jobs are taken only once
    // the whole app is up.
    this.worker.concurrency = this.config.QUNLI_COGNITION_CONCURRENCY;
    this.worker.run().catch((error: unknown) => this.logger.error(`episode worker stopped: ${String(error)}`));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.close();
  }

  async process(job: Job<EpisodeJob>): Promise<EpisodeResult> {
    return this.runner.run(job.data, job.attemptsMade + 1);
  }
}
