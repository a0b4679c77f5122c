import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '@app/testing';
import { QunliConfig } from './config.js';
import { HeapSteward } from './heap-steward.js';
import { Metrics } from './metrics.js';
import { nativeBurst } from './native-burst.fixture.js';
import { onGlibc } from './native-heap.js';

const MB = 1024 * 1024;

/**
 * A burst as the scheduler has one: a backlog held in memory while the loop is busy (at least `ms`, across samples,
 * and until the committed heap has grown by `growBy`), then let go but for one object in `keepEvery`, so old
 * space is left with pages that each hold a little.
 */
function burst(ms: number, growBy: number, keepEvery: number): unknown[] {
  const backlog: unknown[] = [];
  const from = process.memoryUsage().heapTotal;
  const until = performance.now() + ms;
  let i = 0;
  while (performance.now() < until || process.memoryUsage().heapTotal - from < growBy) {
    for (let k = 0; k < 10_000; k++, i++) backlog.push({ n: i, text: `群里的消息 ${i}`, tags: [k] });
    if (backlog.length > 5_000_000) break;
  }
  // The backlog goes with this frame; what is returned is all that stays live.
  return backlog.filter((_, k) => k % keepEvery === 0);
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
      const before = process.memoryUsage().heapTotal;
      let kept: unknown[] | undefined = burst(2500, 200 * MB, 40);
      let keptNative: Buffer[] | undefined = nativeBurst(8000, 16 * 1024, 16);
      const grown = process.memoryUsage().heapTotal;
      expect(grown - before).toBeGreaterThan(64 * MB);
      await eventually(
        'a compacting collection',
        async () => (await counter(metrics, 'qunli_heap_compactions_total')) === 1,
        20_000,
      );
      // At least four fifths of what the burst made V8 commit is given back (a fortieth of it is still live):
      // a collection that does not compact leaves most of the pages.
      const after = process.memoryUsage().heapTotal;
      expect(after).toBeLessThan(before + (grown - before) / 5);
      expect(await counter(metrics, 'qunli_heap_compaction_released_bytes_total')).toBeGreaterThan(0);
      expect(kept.length).toBeGreaterThan(0); // what was live is still there
      // 15 of every 16 of the burst's 125 MB of Buffers were freed: the trim after the collection gives most of
      // those pages back (without it they stay resident).
      const trimmed = await counter(metrics, 'qunli_heap_trim_released_bytes_total');
      if (onGlibc()) expect(trimmed).toBeGreaterThan(50 * MB);
      else expect(trimmed).toBe(0);
      expect(keptNative.length).toBe(500);
      kept = undefined;
      keptNative = undefined;
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
      const kept = burst(1500, 100 * MB, 40);
      await sleep(3500);
      expect(kept.length).toBeGreaterThan(0);
      expect(await counter(metrics, 'qunli_heap_compactions_total')).toBe(0);
      expect(await counter(metrics, 'qunli_heap_trim_released_bytes_total')).toBe(0);
    } finally {
      await s.onApplicationShutdown();
    }
  }, 30_000);
});
