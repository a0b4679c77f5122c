import 'reflect-metadata';
import { ConsumerGroup } from '@app/contracts';
import { connectStreamConsumer } from '@app/event-bus';
import { warmSegmenter } from '@app/persistence';
import { bootstrap } from '@app/platform';
import { SchedulerModule } from './scheduler.module.js';
import { schedulerConsumerOptions } from './groups/scheduler-consumer.js';

await bootstrap(
  'scheduler',
  (config) => {
    // The projector's search terms and keyword learning segment every message: load jieba before the first one, in
    // the thread that runs them (the log thread loads its own; the decisions never segment).
    if (config.QUNLI_PROJECTOR === 'inline') warmSegmenter();
    return SchedulerModule.forRoot(config.QUNLI_PROJECTOR);
  },
  {
    configure: (app) => {
      connectStreamConsumer(app, ConsumerGroup.Scheduler, schedulerConsumerOptions(app));
    },
  },
);
