import { Module } from '@nestjs/common';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule } from '@app/persistence';
import { PersonaModule } from '@app/persona';
import { PlatformModule } from '@app/platform';
import { OneBotIntakeModule } from './onebot/onebot-intake.module.js';

/** Ingress never reads Postgres; `PersistenceModule` is here for `/health`, which reports the database too. */
@Module({
  imports: [
    PlatformModule.forApp('ingress'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    PersonaModule,
    OneBotIntakeModule,
  ],
})
export class IngressModule {}
