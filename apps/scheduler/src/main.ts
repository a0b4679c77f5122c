import 'reflect-metadata';
import { ConsumerGroup } from '@app/contracts';
import { connectStreamConsumer } from '@app/event-bus';
import { bootstrap } from '@app/platform';
import { SchedulerModule } from './scheduler.module.js';
import { GroupStateStore } from './groups/group-state.store.js';
import { TimerWheel } from './timers/timer-wheel.js';

await bootstrap('scheduler', (config) => SchedulerModule.forRoot(config.QUNLI_PROJECTOR), {
  configure: (app) => {
    // The durable timers of a partition are fired by whoever owns the partition, so they follow its lease; so does
    // the group-state store's knowledge of which groups have no state.
    connectStreamConsumer(app, ConsumerGroup.Scheduler, {
      partitionTasks: [app.get(GroupStateStore), app.get(TimerWheel)],
    });
  },
});
