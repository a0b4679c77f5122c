import { Module } from '@nestjs/common';
import { EventBusModule } from '@app/event-bus';
import { OneBotHttpApi } from '@app/onebot';
import { PersistenceModule } from '@app/persistence';
import { Metrics, PlatformModule, QunliConfig } from '@app/platform';
import { SendBackoff } from './sends/send-backoff.js';
import { SendLedger } from './sends/send-ledger.repository.js';
import { SendLedgerSweeper } from './sends/send-ledger.sweeper.js';
import { SendConsumer } from './sends/send.consumer.js';

/** outbound: `action.send` events in, OneBot API calls out, `message.sent` / `send.*` events back. */
@Module({
  imports: [PlatformModule.forApp('outbound'), PersistenceModule.forRoot(), EventBusModule.forRoot()],
  controllers: [SendConsumer],
  providers: [
    SendLedger,
    SendLedgerSweeper,
    SendBackoff,
    {
      provide: OneBotHttpApi,
      inject: [QunliConfig, Metrics],
      useFactory: (config: QunliConfig, metrics: Metrics) => OneBotHttpApi.fromConfig(config, metrics),
    },
  ],
})
export class OutboundModule {}
