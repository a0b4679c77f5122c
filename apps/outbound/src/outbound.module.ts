import { Module, type DynamicModule } from '@nestjs/common';
import { EventBusModule } from '@app/event-bus';
import { chatModelProvider } from '@app/llm';
import { PersistenceModule } from '@app/persistence';
import { PlatformModule, type PlatformOptions } from '@app/platform';
import { ReplyPolisher } from './polish/reply.polisher.js';
import { ActionSendConsumer } from './sends/action-send.consumer.js';
import { OutboxDrainer } from './sends/outbox.drainer.js';
import { OutboxStore } from './sends/outbox.store.js';
import { ReplyDelivery } from './sends/reply-delivery.js';
import { SendBackoff } from './sends/send-backoff.js';
import { SendLedger } from './sends/send-ledger.repository.js';
import { SendLedgerSweeper } from './sends/send-ledger.sweeper.js';
import { SendMetrics } from './sends/send.metrics.js';
import { SendOrderGuard } from './sends/send-order.guard.js';
import { SendPacer } from './sends/send-pacer.js';
import { oneBotApiProviders } from './transports/onebot-api.provider.js';

/**
 * outbound: `action.send` events in, OneBot API calls out (HTTP API, forward WebSocket, or the reverse WebSocket
 * through ingress), `message.sent` / `send.*` events back.
 */
@Module({})
export class OutboundModule {
  /** `platform` lets tests hand in their own configuration. */
  static forRoot(platform: PlatformOptions = {}): DynamicModule {
    return {
      module: OutboundModule,
      imports: [PlatformModule.forApp('outbound', platform), PersistenceModule.forRoot(), EventBusModule.forRoot()],
      controllers: [ActionSendConsumer],
      providers: PROVIDERS,
    };
  }
}

const PROVIDERS = [
  ...oneBotApiProviders,
  chatModelProvider,
  ReplyPolisher,
  SendMetrics,
  SendLedger,
  SendLedgerSweeper,
  SendBackoff,
  SendPacer,
  SendOrderGuard,
  OutboxStore,
  ReplyDelivery,
  OutboxDrainer,
];
