import { Module } from '@nestjs/common';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule, ProjectorModule } from '@app/persistence';
import { PlatformModule } from '@app/platform';

/**
 * What the projector thread runs: the projector's consumer group and the stream trimmer, with their own Redis and
 * Postgres connections. Default process metrics stay with the main thread (one process, one set).
 */
@Module({
  imports: [
    PlatformModule.forApp('scheduler', { withoutDefaultMetrics: true }),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    ProjectorModule,
  ],
})
export class ProjectorHostModule {}
