import { Module, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { ConsumerGroup } from '@app/contracts';
import { StreamConsumers, type RunningConsumer } from '@app/event-bus';
import { ProjectionRepository } from './projection.repository.js';
import { ProjectorService } from './read-models.projector.js';
import { warmSegmenter } from './search-terms.js';
import { StreamTrimmer } from './stream-trimmer.js';

/** Entries the projector reads per partition at once: large batches make cheap transactions. */
const PROJECTOR_READ_COUNT = 1000;
/** After a read that was not full, let entries gather this long (real ms) before reading the partition again. */
export const PROJECTOR_LINGER_MS = 200;

/**
 * The projector consumer group (read models + `event_log`) and the stream trimmer, run by whichever app imports
 * this module. Needs `PlatformModule`, `PersistenceModule` and `EventBusModule`.
 */
@Module({
  providers: [ProjectionRepository, ProjectorService, StreamTrimmer],
  exports: [ProjectorService, StreamTrimmer],
})
export class ProjectorModule implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private consumer: RunningConsumer | undefined;

  constructor(
    private readonly consumers: StreamConsumers,
    private readonly projector: ProjectorService,
    private readonly trimmer: StreamTrimmer,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // Search terms (and the keyword learning that runs beside the projector) segment every message: the thread that
    // projects loads jieba before its first one, and no other thread of the process has to.
    warmSegmenter();
    this.consumer = this.consumers.batch(ConsumerGroup.Projector, this.projector, {
      readCount: PROJECTOR_READ_COUNT,
      lingerMs: PROJECTOR_LINGER_MS,
    });
    await this.consumer.start();
    this.trimmer.start();
  }

  // Before shutdown, not on it: the consumer must stop while Redis and Postgres are still open.
  async beforeApplicationShutdown(): Promise<void> {
    await this.trimmer.stop();
    await this.consumer?.stop();
    this.consumer = undefined;
  }
}
