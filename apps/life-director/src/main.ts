import 'reflect-metadata';
import { ConsumerGroup } from '@app/contracts';
import { connectStreamConsumer } from '@app/event-bus';
import { bootstrap } from '@app/platform';
import { LifeDirectorModule } from './life-director.module.js';

await bootstrap('life-director', () => LifeDirectorModule.forApp(), {
  configure: (app) => {
    connectStreamConsumer(app, ConsumerGroup.Memory);
  },
});
