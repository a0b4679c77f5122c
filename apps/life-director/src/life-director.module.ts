import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { Keyspace, QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule } from '@app/persistence';
import { PlatformModule } from '@app/platform';
import { LifeTickProcessor } from './life/life-tick.processor.js';
import { LifeDirector } from './life/life-director.service.js';
import { personaProvider } from './persona/persona.provider.js';
import { BullConnection, BullConnectionModule } from './queues/bull-connection.js';

/** The bot's life line (ADR §10): ticks through the persona's routine and records `personal.activity.*` events. */
@Module({
  imports: [
    PlatformModule.forApp('life-director'),
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
    BullModule.registerQueue({ name: QueueName.LifeTicks }),
  ],
  providers: [personaProvider, LifeDirector, LifeTickProcessor],
})
export class LifeDirectorModule {}
