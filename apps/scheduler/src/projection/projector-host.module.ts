import { Module } from '@nestjs/common';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule, ProjectorModule } from '@app/persistence';
import { PlatformModule } from '@app/platform';
import { KeywordLearningModule } from '../keywords/keyword-learning.module.js';

/**
 * What the scheduler's log thread runs (ADR-0025): the consumers that follow the whole log and decide nothing the
 * scheduler waits for — the projector with the stream trimmer, and the keyword lexicon's learning with the persona's
 * seeding — with their own Redis and Postgres connections. Default process metrics stay with the main thread (one
 * process, one set).
 */
@Module({
  imports: [
    PlatformModule.forApp('scheduler', { withoutDefaultMetrics: true }),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    ProjectorModule,
    KeywordLearningModule,
  ],
})
export class ProjectorHostModule {}
