import 'reflect-metadata';
import { ConsumerGroup } from '@app/contracts';
import { connectStreamConsumer } from '@app/event-bus';
import { bootstrap } from '@app/platform';
import { SchedulerModule } from './scheduler.module.js';
import { schedulerConsumerOptions } from './groups/scheduler-consumer.js';

await bootstrap('scheduler', (config) => SchedulerModule.forRoot(config.QUNLI_PROJECTOR), {
  configure: (app) => {
    connectStreamConsumer(app, ConsumerGroup.Scheduler, schedulerConsumerOptions(app));
  },
});
