import { Module, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { ConsumerGroup } from '@app/contracts';
import { StreamConsumers, type RunningConsumer } from '@app/event-bus';
import { PersonaModule } from '@app/persona';
import { KEYWORD_LOOKUP } from './keyword-lookup.js';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { KeywordSeeder } from './keyword-seeder.js';
import { KeywordsConsumer } from './keywords.consumer.js';
import { KeywordsController } from './keywords.controller.js';
import { LiveKeywordLookup } from './live-keyword-lookup.js';

/**
 * The dynamic keyword lexicon (ADR-0020): the `keywords` consumer group that learns it, the persona seeding, and
 * the `KEYWORD_LOOKUP` attention reads. Needs `PlatformModule` and `EventBusModule`.
 */
@Module({
  imports: [PersonaModule],
  controllers: [KeywordsController],
  providers: [
    KeywordLexiconStore,
    KeywordsConsumer,
    KeywordSeeder,
    LiveKeywordLookup,
    { provide: KEYWORD_LOOKUP, useExisting: LiveKeywordLookup },
  ],
  exports: [KEYWORD_LOOKUP, KeywordLexiconStore],
})
export class KeywordsModule implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private consumer: RunningConsumer | undefined;

  constructor(
    private readonly consumers: StreamConsumers,
    private readonly handler: KeywordsConsumer,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.consumer = this.consumers.batch(ConsumerGroup.Keywords, this.handler);
    await this.consumer.start();
  }

  // Before shutdown, not on it: the consumer must stop while Redis is still open.
  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer?.stop();
    this.consumer = undefined;
  }
}
