import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Gauge, Registry } from 'prom-client';
import type { Metrics } from './metrics.js';
import { QueueBacklogStore } from './queue-backlog.store.js';

/** A scrape that waits longer than this for Redis leaves the queue gauges out rather than hang. */
const SCRAPE_TIMEOUT_MS = 2000;

/**
 * Every BullMQ queue an app registers is exported by that app: BullMQ's own `bullmq_job_count{queue,state}`,
 * `bullmq_job_completed_total` and `bullmq_job_failed_total`, plus how long the oldest job has been waiting for a
 * worker (`qunli_queue_oldest_waiting_seconds`). The scheduler, which enqueues episodes, exports the `episodes`
 * queue too, so the autoscaler's signal does not disappear when cognition is scaled to zero.
 */
export class QueueMetrics {
  private readonly registry = new Registry();
  private readonly oldestWaiting = new Gauge({
    name: 'qunli_queue_oldest_waiting_seconds',
    help: 'Age of the oldest job waiting for a worker (waiting or prioritized), 0 when none waits',
    labelNames: ['queue'],
    registers: [this.registry],
  });

  constructor(
    metrics: Metrics,
    private readonly app: string,
    private readonly redis: Redis,
    private readonly queues: readonly Queue[],
  ) {
    this.registry.setDefaultLabels({ app });
    metrics.contribute(() => this.scrape());
  }

  async scrape(): Promise<string> {
    if (this.redis.status !== 'ready') return `# queue gauges unavailable: redis ${this.redis.status}`;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`# queue gauges unavailable: redis did not answer within ${SCRAPE_TIMEOUT_MS} ms`),
        SCRAPE_TIMEOUT_MS,
      );
    });
    try {
      return await Promise.race([this.read(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async read(): Promise<string> {
    const now = Date.now();
    const exports = await Promise.all(
      this.queues.map(async (queue) => {
        const since = await new QueueBacklogStore(this.redis, queue).oldestWaitingSince();
        this.oldestWaiting.set({ queue: queue.name }, since === undefined ? 0 : Math.max(0, now - since) / 1000);
        return queue.exportPrometheusMetrics({ app: this.app });
      }),
    );
    return [...exports, await this.registry.metrics()].join('\n');
  }
}
