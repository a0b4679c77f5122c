import 'reflect-metadata';
import { ConsumerGroup } from '@app/contracts';
import { StreamConsumers } from '@app/event-bus';
import { bootstrap } from '@app/platform';
import { OutboundModule } from './outbound.module.js';

await bootstrap('outbound', () => OutboundModule, {
  configure: (app) => {
    app.connectMicroservice({ strategy: app.get(StreamConsumers).server(ConsumerGroup.Outbound) });
  },
});
