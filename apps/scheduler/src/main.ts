import 'reflect-metadata';
import { ConsumerGroup } from '@app/contracts';
import { connectStreamConsumer } from '@app/event-bus';
import { bootstrap } from '@app/platform';
import { SchedulerModule } from './scheduler.module.js';

await bootstrap('scheduler', () => SchedulerModule, {
  configure: (app) => {
    connectStreamConsumer(app, ConsumerGroup.Scheduler);
  },
});
