import { Module, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { ConsumerGroup } from '@app/contracts';
import { StreamConsumers, type RunningConsumer } from '@app/event-bus';
import { PersonaModule } from '@app/persona';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { KeywordSeeder } from './keyword-seeder.js';
import { KeywordsConsumer } from './keywords.consumer.js';

/** After a read that was not full, let entries gather this long (real ms): the lexicon's learning waits for nobody. */
const KEYWORDS_LINGER_MS = 200;

/**
 * The `keywords` consumer group that learns the lexicon from the log (ADR-0020), and the seeding of the persona's
 * interests at start. It decides nothing the scheduler waits for, so it runs beside the projector: on the
 * scheduler's main thread (`QUNLI_PROJECTOR=inline`, the default) or in its log thread (`thread`, ADR-0025). Both cut
 * text with jieba, so only the thread that runs them loads its dictionary (with the thread, the scheduler's RSS at start
 * was ≈ 45 MB lower once the main thread stopped loading a copy: docs/BENCHMARKS.md). Needs `PlatformModule` and
 * `EventBusModule`.
 */
@Module({ imports: [PersonaModule], providers: [KeywordLexiconStore, KeywordSeeder, KeywordsConsumer] })
export class KeywordLearningModule implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private consumer: RunningConsumer | undefined;

  constructor(
    private readonly consumers: StreamConsumers,
    private readonly handler: KeywordsConsumer,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.consumer = this.consumers.batch(ConsumerGroup.Keywords, this.handler, { lingerMs: KEYWORDS_LINGER_MS });
    await this.consumer.start();
  }

  // Before shutdown, not on it: the consumer must stop while Redis is still open.
  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer?.stop();
    this.consumer = undefined;
  }
}
