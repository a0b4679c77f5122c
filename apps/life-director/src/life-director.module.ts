import { Module } from '@nestjs/common';
import { QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule } from '@app/persistence';
import { PersonaModule } from '@app/persona';
import { PlatformModule, QueuesModule } from '@app/platform';
import { LifeTickProcessor } from './life/life-tick.processor.js';
import { LifeDirector } from './life/life-director.service.js';

/** The bot's life line (ADR §10): ticks through the persona's routine and records `personal.activity.*` events. */
@Module({
  imports: [
    PlatformModule.forApp('life-director'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    PersonaModule,
    QueuesModule.forRoot(QueueName.LifeTicks),
  ],
  providers: [LifeDirector, LifeTickProcessor],
})
export class LifeDirectorModule {}
