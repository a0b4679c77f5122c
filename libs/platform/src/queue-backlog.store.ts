import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/** How many of a queue's next prioritized jobs are looked at to find the oldest one. */
const PRIORITIZED_SAMPLE = 1000;
/** BullMQ's prioritized score is `priority * 2^32 + counter`; the counter orders jobs by arrival. */
const PRIORITY_COUNTER_SPAN = 0x100000000;

/**
 * Reads how long the oldest job of a queue has been waiting for a worker, from BullMQ's own keys (the `wait` list,
 * oldest at its tail, and the `prioritized` sorted set, whose score carries an arrival counter). Delayed jobs are
 * not waiting for a worker and are left out.
 */
export class QueueBacklogStore {
  constructor(
    private readonly redis: Redis,
    private readonly queue: Queue,
  ) {}

  /** Creation time (epoch ms, real time) of the oldest job waiting for a worker, or undefined when none waits. */
  async oldestWaitingSince(): Promise<number | undefined> {
    const client = this.redis;
    const [oldestWaiting] = await client.lrange(this.queue.keys.wait!, -1, -1);
    const prioritized = await client.zrange(this.queue.keys.prioritized!, 0, PRIORITIZED_SAMPLE - 1, 'WITHSCORES');
    let oldestPrioritized: string | undefined;
    let lowestCounter = Number.POSITIVE_INFINITY;
    for (let i = 0; i + 1 < prioritized.length; i += 2) {
      const counter = Number(prioritized[i + 1]) % PRIORITY_COUNTER_SPAN;
      if (counter < lowestCounter) {
        lowestCounter = counter;
        oldestPrioritized = prioritized[i];
      }
    }
    const ids = [oldestWaiting, oldestPrioritized].filter((id): id is string => id !== undefined);
    const stamps = await Promise.all(ids.map((id) => client.hget(this.queue.toKey(id), 'timestamp')));
    const times = stamps.map(Number).filter((t) => Number.isFinite(t) && t > 0);
    return times.length === 0 ? undefined : Math.min(...times);
  }
}
