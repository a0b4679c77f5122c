import type { INestApplicationContext } from '@nestjs/common';
import type { ConsumerOptions } from '@app/event-bus';
import { TimerWheel } from '../timers/timer-wheel.js';
import { GroupRuntime } from './group-runtime.service.js';
import { GroupStateStore } from './group-state.store.js';

/**
 * How the scheduler's consumer group reads: the durable timers of a partition are fired by whoever owns the
 * partition, so they follow its lease, and so does the group-state store's knowledge of which groups have no
 * state; each entry's state and reads start with the reader's duplicate check (`GroupRuntime.prefetch`).
 */
export function schedulerConsumerOptions(app: INestApplicationContext, extra: ConsumerOptions = {}): ConsumerOptions {
  const runtime = app.get(GroupRuntime);
  return {
    partitionTasks: [app.get(GroupStateStore), app.get(TimerWheel)],
    prefetch: (event, ctx) => runtime.prefetch(event, ctx),
    ...extra,
  };
}
