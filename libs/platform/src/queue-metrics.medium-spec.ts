import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { deleteKeys, testRedis, uniquePrefix } from '@app/testing';
import { Metrics } from './metrics.js';
import { QueueMetrics } from './queue-metrics.js';

/** Real Redis and BullMQ: what an app's /metrics says about the queues it registered. */
describe('QueueMetrics', () => {
  let redis: Redis;
  let prefix: string;
  let queue: Queue;

  beforeEach(async () => {
    redis = testRedis();
    await redis.ping();
    prefix = uniquePrefix('queue-metrics');
    queue = new Queue('episodes', { connection: redis, prefix });
  });

  afterEach(async () => {
    await queue.close();
    await deleteKeys(redis, prefix);
    await redis.quit();
  });

  function sample(text: string, series: string): number | undefined {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  }

  it("exports BullMQ's counts per state, prioritized and delayed jobs included, once for two exporters", async () => {
    await queue.add('episode', {}, { priority: 2 });
    await queue.add('episode', {}, { priority: 1 });
    await queue.add('episode', {});
    await queue.add('episode', {}, { delay: 60_000 });
    const metrics = new Metrics('scheduler', false);
    new QueueMetrics(metrics, 'scheduler', redis, [queue]);
    metrics.contribute(() => queue.exportPrometheusMetrics({ app: 'scheduler' }));
    const text = await metrics.scrape();
    const count = (state: string) =>
      sample(text, `bullmq_job_count{queue="episodes", state="${state}", app="scheduler"}`);
    expect([count('prioritized'), count('waiting'), count('delayed'), count('active')]).toEqual([2, 1, 1, 0]);
    expect(text.match(/^# TYPE bullmq_job_count gauge$/gm)).toHaveLength(1);
    expect(text.match(/state="prioritized"/g)).toHaveLength(1);
  });

  it('reports the age of the oldest job waiting for a worker, prioritized ones included, and 0 when none waits', async () => {
    const metrics = new Metrics('scheduler', false);
    new QueueMetrics(metrics, 'scheduler', redis, [queue]);
    const age = async () =>
      sample(await metrics.scrape(), 'qunli_queue_oldest_waiting_seconds{queue="episodes",app="scheduler"}');
    expect(await age()).toBe(0);

    const oldest = await queue.add('episode', {}, { priority: 5 });
    // Backdate the oldest job by ten minutes; a newer, more urgent job must not hide it.
    await redis.hset(queue.toKey(oldest.id!), 'timestamp', String(Date.now() - 600_000));
    await queue.add('episode', {}, { priority: 1 });
    await queue.add('episode', {}, { delay: 60_000 });
    expect(await age()).toBeGreaterThanOrEqual(600);
    expect(await age()).toBeLessThan(700);

    await queue.obliterate({ force: true });
    expect(await age()).toBe(0);
  });

  it('leaves the queue gauges out instead of hanging when Redis is away', async () => {
    const away = testRedis();
    await away.quit();
    const metrics = new Metrics('scheduler', false);
    new QueueMetrics(metrics, 'scheduler', away, [queue]);
    const text = await metrics.scrape();
    expect(text).toMatch(/^# queue gauges unavailable: redis \w+$/m);
    expect(text).not.toContain('bullmq_job_count');
  });
});
