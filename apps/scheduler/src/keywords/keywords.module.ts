import { Module, type DynamicModule } from '@nestjs/common';
import { PersonaModule } from '@app/persona';
import { KEYWORD_LOOKUP } from './keyword-lookup.js';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { KeywordLearningModule } from './keyword-learning.module.js';
import { KeywordsController } from './keywords.controller.js';
import { LiveKeywordLookup } from './live-keyword-lookup.js';

/**
 * The dynamic keyword lexicon (ADR-0020): the persona seeding, the people's commands, the `KEYWORD_LOOKUP`
 * attention reads and — `forRoot({ learn: true })` — the `keywords` consumer group that learns it
 * (`KeywordLearningModule`, with the persona's seeding; the scheduler runs it beside the projector, on its main
 * thread or in its log thread, ADR-0025). Needs `PlatformModule` and `EventBusModule`.
 */
@Module({
  imports: [PersonaModule],
  controllers: [KeywordsController],
  providers: [KeywordLexiconStore, LiveKeywordLookup, { provide: KEYWORD_LOOKUP, useExisting: LiveKeywordLookup }],
  exports: [KEYWORD_LOOKUP, KeywordLexiconStore],
})
export class KeywordsModule {
  static forRoot(options: { learn: boolean }): DynamicModule {
    return { module: KeywordsModule, imports: options.learn ? [KeywordLearningModule] : [] };
  }
}
