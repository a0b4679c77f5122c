import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { Keyspace, QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule } from '@app/persistence';
import { PlatformModule } from '@app/platform';
import { EpisodeProcessor } from './episodes/episode.processor.js';
import { EpisodeRunner } from './episodes/episode.runner.js';
import { chatModelProvider } from './llm/chat-model.provider.js';
import { personaProvider } from './persona/persona.provider.js';
import { BullConnection, BullConnectionModule } from './queues/bull-connection.js';

/** The slow plane (ADR §4.2): runs episodes from the `episodes` queue and records their outcomes as events. */
@Module({
  imports: [
    PlatformModule.forApp('cognition'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    BullModule.forRootAsync({
      imports: [BullConnectionModule],
      inject: [BullConnection, Keyspace],
      useFactory: (connection: BullConnection, keys: Keyspace) => ({
        connection: connection.redis,
        prefix: keys.bullPrefix,
      }),
    }),
    BullModule.registerQueue({ name: QueueName.Episodes }),
  ],
  providers: [chatModelProvider, personaProvider, EpisodeRunner, EpisodeProcessor],
})
export class CognitionModule {}
