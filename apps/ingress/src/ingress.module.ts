import { Module } from '@nestjs/common';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule } from '@app/persistence';
import { PlatformModule } from '@app/platform';
import { OneBotIntakeModule } from './onebot/onebot-intake.module.js';

/** Ingress never reads Postgres; `PersistenceModule` is here for `/health`, which reports the database too. */
@Module({
  imports: [
    PlatformModule.forApp('ingress'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    OneBotIntakeModule,
  ],
})
export class IngressModule {}
