import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { MetricsTime, type Job, type Queue } from 'bullmq';
import { QueueName } from '@app/contracts';
import { Metrics, QunliConfig } from '@app/platform';
import { LifeDirector } from './life-director.service.js';

export const LIFE_TICK_SCHEDULER = 'life-tick';

/**
 * Ticks come from a BullMQ job scheduler, so however many life-director processes run, each tick is handled once
 * and a tick missed while all were down is not lost. The interval is product time (`QUNLI_LIFE_TICK_MINUTES`)
 * scaled by `QUNLI_TIME_SCALE`.
 */
@Processor(QueueName.LifeTicks, {
  autorun: false,
  metrics: { maxDataPoints: MetricsTime.ONE_WEEK },
  removeOnComplete: { count: 100 },
  removeOnFail: { count: 1000 },
})
export class LifeTickProcessor extends WorkerHost implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LifeTickProcessor.name);

  constructor(
    private readonly director: LifeDirector,
    private readonly config: QunliConfig,
    @InjectQueue(QueueName.LifeTicks) private readonly queue: Queue,
    metrics: Metrics,
  ) {
    super();
    metrics.contribute(() => queue.exportPrometheusMetrics({ app: 'life-director' }));
  }

  async onApplicationBootstrap(): Promise<void> {
    const every = Math.max(
      100,
      Math.round((this.config.QUNLI_LIFE_TICK_MINUTES * 60_000) / this.config.QUNLI_TIME_SCALE),
    );
    await this.queue.upsertJobScheduler(LIFE_TICK_SCHEDULER, { every }, { name: LIFE_TICK_SCHEDULER });
    this.logger.log(`life ticks every ${every} ms`);
    this.worker.run().catch((error: unknown) => this.logger.error(`life tick worker stopped: ${String(error)}`));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.close();
  }

  async process(_job: Job): Promise<{ changed: boolean; activity: string | null }> {
    const plan = await this.director.tick();
    return { changed: plan.changes.length > 0, activity: plan.next.current?.title ?? null };
  }
}
