import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '@app/testing';
import { QunliConfig } from './config.js';
import { HeapSteward } from './heap-steward.js';
import { Metrics } from './metrics.js';

const MB = 1024 * 1024;

/** Fills the heap for about `ms`, keeping one object in `keepEvery` alive: a burst that leaves fragmented pages. */
function burst(ms: number, keepEvery: number): unknown[] {
  const kept: unknown[] = [];
  const until = performance.now() + ms;
  let i = 0;
  while (performance.now() < until) {
    const batch = Array.from({ length: 10_000 }, (_, k) => ({ n: i + k, text: `群里的消息 ${i + k}`, tags: [k] }));
    for (let k = 0; k < batch.length; k += keepEvery) kept.push(batch[k]);
    i += batch.length;
  }
  return kept;
}

async function counter(metrics: Metrics, name: string): Promise<number> {
  const found = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return found?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
}

function steward(quietMs: number): { steward: HeapSteward; metrics: Metrics } {
  const config = Object.assign(new QunliConfig(), { QUNLI_HEAP_COMPACT_QUIET_MS: quietMs });
  const metrics = new Metrics('test', false);
  return { steward: new HeapSteward(config, metrics), metrics };
}

describe('HeapSteward', () => {
  it('gives back the heap a burst grew once the thread is quiet, and only once', async () => {
    const { steward: s, metrics } = steward(1500);
    s.onApplicationBootstrap();
    try {
      await sleep(1200); // the first samples: the heap before the burst
      // Two seconds of allocation across samples (the loop is busy), a tenth of it kept live.
      let kept: unknown[] | undefined = burst(2500, 10);
      const grown = process.memoryUsage().heapTotal;
      await eventually(
        'a compacting collection',
        async () => (await counter(metrics, 'qunli_heap_compactions_total')) === 1,
        20_000,
      );
      const after = process.memoryUsage().heapTotal;
      expect(after).toBeLessThan(grown - 64 * MB);
      expect(await counter(metrics, 'qunli_heap_compaction_released_bytes_total')).toBeGreaterThan(64 * MB);
      expect(kept.length).toBeGreaterThan(0); // what was live is still there
      kept = undefined;
      // Quiet and nothing grew since: no second collection.
      await sleep(4000);
      expect(await counter(metrics, 'qunli_heap_compactions_total')).toBe(1);
    } finally {
      await s.onApplicationShutdown();
    }
  }, 60_000);

  it('does nothing when turned off', async () => {
    const { steward: s, metrics } = steward(0);
    s.onApplicationBootstrap();
    try {
      await sleep(1100);
      const kept = burst(1500, 10);
      await sleep(3500);
      expect(kept.length).toBeGreaterThan(0);
      expect(await counter(metrics, 'qunli_heap_compactions_total')).toBe(0);
    } finally {
      await s.onApplicationShutdown();
    }
  }, 30_000);
});
