import { Module } from '@nestjs/common';
import { QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule } from '@app/persistence';
import { PersonaModule } from '@app/persona';
import { PlatformModule, QueuesModule } from '@app/platform';
import { EpisodeProcessor } from './episodes/episode.processor.js';
import { EpisodeRunner } from './episodes/episode.runner.js';
import { chatModelProvider } from '@app/llm';

/** The slow plane (ADR §4.2): runs episodes from the `episodes` queue and records their outcomes as events. */
@Module({
  imports: [
    PlatformModule.forApp('cognition'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    PersonaModule,
    QueuesModule.forRoot(QueueName.Episodes),
  ],
  providers: [chatModelProvider, EpisodeRunner, EpisodeProcessor],
})
export class CognitionModule {}
