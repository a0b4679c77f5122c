import type { Redis } from 'ioredis';
import { EventKind, Keyspace, makeEvent, PRIORITY } from '@app/contracts';
import { Metrics } from '@app/platform';
import { deleteKeys, heapAfterGc, interceptCommand, sampleMessage, testRedis, uniquePrefix } from '@app/testing';
import { BusMetrics } from './bus-metrics.js';
import type { BatchEntry } from './consumer-types.js';
import { sealedFields, sealEnvelope } from './entry-seal.js';
import { CONSUMER, PartitionReader, type ReaderSettings } from './partition-reader.js';
import { DEFAULT_BLOCK_MS } from './stream-consumers.js';
import { TEST_READER_SETTINGS } from './reader-settings.fixture.js';

/** A reader of partition 0 of `keys`, its log lines dropped. */
function readerOn(
  redis: Redis,
  blocking: Redis,
  keys: Keyspace,
  group: string,
  settings: ReaderSettings,
  dispatch: ConstructorParameters<typeof PartitionReader>[6],
  metrics = new BusMetrics(new Metrics('test', false)),
): PartitionReader {
  const log = { warn: () => undefined, error: () => undefined };
  return new PartitionReader(redis, blocking, keys, group, 0, settings, dispatch, metrics, log);
}

/** The fields of a sealed `message.observed` entry, as a writer appends it. */
function observedEntry(groupId: string, text: string, priority: number = PRIORITY.normal): (string | Buffer)[] {
  return sealedFields(
    sealEnvelope(
      makeEvent({ kind: EventKind.MessageObserved, groupId, source: 'test', payload: sampleMessage(text), priority }),
    ),
  );
}

/** A histogram's count and sum for one consumer group. */
async function histogram(metrics: Metrics, name: string, group: string): Promise<{ count: number; sum: number }> {
  // A histogram's values name their series (`_bucket`, `_sum`, `_count`); prom-client's type leaves the name out.
  const values = (await metrics.registry.getSingleMetric(name)!.get()).values as {
    metricName?: string;
    labels: Record<string, string | number>;
    value: number;
  }[];
  const of = (suffix: string) =>
    values.find((v) => v.metricName === `${name}${suffix}` && v.labels['group'] === group)?.value ?? 0;
  return { count: of('_count'), sum: of('_sum') };
}

describe('PartitionReader', () => {
  let redis: Redis;
  let prefix: string;

  beforeAll(() => {
    redis = testRedis();
    prefix = uniquePrefix('reader');
  });

  afterAll(async () => {
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  it('stops while a blocking read never settles (ioredis strands a command cut off by a Redis restart)', async () => {
    let reads = 0;
    // The blocking connection as ioredis leaves it after a drop and a disconnect mid-reconnect: a pending read
    // that neither resolves nor rejects.
    const stranded = {
      xreadgroup: () => {
        reads++;
        return new Promise(() => undefined);
      },
    } as unknown as Redis;
    const reader = readerOn(redis, stranded, new Keyspace(prefix, 2), 'test-group', TEST_READER_SETTINGS, {
      mode: 'each',
      handles: () => true,
      handle: async () => undefined,
    });
    await reader.start();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(reads).toBe(1);
    const stopped = await Promise.race([
      reader.stop().then(() => 'stopped'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3000)),
    ]);
    expect(stopped).toBe('stopped');
  });

  it('counts the entries of its own group an urgent entry waited behind, and how long from its read to its turn', async () => {
    const keys = new Keyspace(`${prefix}:urgent`, 2);
    const stream = keys.stream(0);
    const metrics = new Metrics('test', false);
    const handled: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const blocking = redis.duplicate();
    const reader = readerOn(
      redis,
      blocking,
      keys,
      'urgent-test',
      TEST_READER_SETTINGS,
      {
        mode: 'each',
        handles: () => true,
        handle: async (event) => {
          const text = (event.payload as { text: string }).text;
          if (text === 'first') await held;
          handled.push(text);
        },
      },
      new BusMetrics(metrics),
    );
    // Three ambient messages of one group, then an @ in it behind them, and an @ in a group with nothing queued.
    for (const text of ['first', 'second', 'third']) await redis.xadd(stream, '*', ...observedEntry('300010', text));
    await redis.xadd(stream, '*', ...observedEntry('300010', '@ behind three', PRIORITY.direct));
    await redis.xadd(stream, '*', ...observedEntry('300011', '@ alone', PRIORITY.direct));
    await reader.start();
    try {
      await waitFor(() => handled.includes('@ alone'));
      await new Promise((resolve) => setTimeout(resolve, 150));
      release();
      await waitFor(() => handled.length === 5);
      expect(handled.filter((text) => text !== '@ alone')).toEqual(['first', 'second', 'third', '@ behind three']);
      expect(await histogram(metrics, 'qunli_stream_urgent_ahead', 'urgent-test')).toEqual({ count: 2, sum: 3 });
      const wait = await histogram(metrics, 'qunli_stream_urgent_wait_seconds', 'urgent-test');
      expect(wait.count).toBe(2);
      // The @ behind the held message waited for it (≥ 150 ms); the other started at once.
      expect(wait.sum).toBeGreaterThanOrEqual(0.15);
    } finally {
      release();
      await reader.stop();
      blocking.disconnect();
    }
  });

  it('idempotent: looks nothing up before its handler; an event appended twice is handled twice, its staged effects applied once', async () => {
    const keys = new Keyspace(`${prefix}:idempotent`, 2);
    const stream = keys.stream(0);
    const counter = `${stream}:staged`;
    const metrics = new Metrics('test', false);
    let lookups = 0;
    const commands = interceptCommand(redis, 'zscore', (zscore, args) => {
      lookups++;
      return zscore(...args);
    });
    let handled = 0;
    const blocking = redis.duplicate();
    const reader = readerOn(
      commands,
      blocking,
      keys,
      'idempotent-test',
      TEST_READER_SETTINGS,
      {
        mode: 'each',
        idempotent: true,
        handles: () => true,
        handle: (_event, ctx) => {
          handled++;
          ctx.stage('INCR', [counter]);
          return Promise.resolve();
        },
      },
      new BusMetrics(metrics),
    );
    // One event, appended twice (a writer that retried an append it thought lost).
    const fields = observedEntry('300020', '重复的一条');
    await redis.xadd(stream, '*', ...fields);
    await redis.xadd(stream, '*', ...fields);
    await reader.start();
    try {
      await waitFor(() => handled === 2);
      // The second handler's commit lands just after it returns.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(lookups).toBe(0);
      expect(await redis.get(counter)).toBe('1');
      expect(await redis.xpending(stream, 'idempotent-test')).toEqual([0, null, null, null]);
      const entries = (await metrics.registry.getSingleMetric('qunli_stream_entries_total')!.get()).values;
      const outcome = (o: string) => entries.find((v) => v.labels['outcome'] === o)?.value ?? 0;
      expect([outcome('handled'), outcome('duplicate')]).toEqual([1, 1]);
    } finally {
      await reader.stop();
      blocking.disconnect();
    }
  });

  it('in batch mode, handles entries of its own that a lost read left pending while it read on past them', async () => {
    const keys = new Keyspace(prefix, 2);
    const stream = keys.stream(0);
    const append = (text: string) => redis.xadd(stream, '*', ...observedEntry('300002', text));
    const seen: string[] = [];
    const real = redis.duplicate();
    // The reader's blocking connection, with a gate: while it is closed the reader's next read waits, so a read of
    // the test's can take entries the reader never sees.
    let gate: Promise<void> = Promise.resolve();
    let open: () => void = () => undefined;
    let waiting = false;
    const blocking = {
      xreadgroup: async (...args: unknown[]) => {
        waiting = true;
        await gate;
        waiting = false;
        return (real.xreadgroup as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    } as unknown as Redis;
    const reader = readerOn(
      redis,
      blocking,
      keys,
      'projector',
      { ...TEST_READER_SETTINGS, claimIdleMs: 300 },
      {
        mode: 'batch',
        handler: {
          handleBatch: (entries: BatchEntry[]) => {
            for (const entry of entries) seen.push((entry.event.payload as { text: string }).text);
            return Promise.resolve();
          },
        },
      },
    );
    await reader.start();
    await append('first');
    await waitFor(() => seen.includes('first'));
    gate = new Promise((resolve) => (open = resolve));
    await waitFor(() => waiting);
    // A read of an earlier life of this reader (sent again by ioredis after a reconnect) takes two entries:
    // delivered to this reader's consumer, never handed to it.
    await append('ghost-1');
    await append('ghost-2');
    await redis.xreadgroup('GROUP', 'projector', CONSUMER, 'COUNT', 2, 'STREAMS', stream, '>');
    await append('after');
    open();
    await waitFor(() => seen.includes('after'));
    expect(seen).toEqual(['first', 'after']);
    await waitFor(() => seen.includes('ghost-1') && seen.includes('ghost-2'), 5000);
    const pending = (await redis.xpending(stream, 'projector')) as [number, ...unknown[]];
    expect(pending[0]).toBe(0);
    await reader.stop();
    real.disconnect();
  });

  it('keeps nothing of what it read once it is handled, however long it runs', async () => {
    // A stream of its own: the earlier specs' entries would be read by this new group too.
    const keys = new Keyspace(`${prefix}:retention`, 2);
    const stream = keys.stream(0);
    const ENTRIES = 300;
    const big = '字'.repeat(50_000); // ≈ 100 KB of string per entry once read back
    const appends = redis.pipeline();
    for (let i = 0; i < ENTRIES; i++) {
      appends.xadd(stream, '*', ...observedEntry('300003', `${i} ${big}`));
    }
    await appends.exec();
    let handled = 0;
    const blocking = redis.duplicate();
    const reader = readerOn(
      redis,
      blocking,
      keys,
      'memory',
      { ...TEST_READER_SETTINGS, readCount: 4 },
      {
        mode: 'batch',
        handler: {
          handleBatch: (entries: BatchEntry[]) => {
            handled += entries.length;
            return Promise.resolve();
          },
        },
      },
    );
    const before = heapAfterGc();
    let grown: number;
    try {
      await reader.start();
      await waitFor(() => handled >= ENTRIES, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Seventy-five reads of ≈ 30 MB in all: a reader that kept its replies (a race with a promise that settles
      // only at stop keeps each one) would hold all of it until it stops.
      grown = heapAfterGc() - before;
    } finally {
      // Also when it failed: a reader left running keeps reconnecting and the test run never ends.
      await reader.stop();
      blocking.disconnect();
    }
    expect(handled).toBe(ENTRIES);
    expect(grown).toBeLessThan(10 * 1024 * 1024);
  }, 60_000);

  it('holds a waiting entry as its parsed event only, not the strings of the reply it came in as well', async () => {
    const keys = new Keyspace(`${prefix}:held`, 2);
    const stream = keys.stream(0);
    const ENTRIES = 60;
    // ≈ 100 KB of string per copy; a message carries its text twice (text and segment), as read and once parsed.
    const big = '字'.repeat(50_000);
    const appends = redis.pipeline();
    for (let i = 0; i < ENTRIES; i++) appends.xadd(stream, '*', ...observedEntry(String(310_000 + i), `${i} ${big}`));
    await appends.exec();
    let started = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const blocking = redis.duplicate();
    const reader = readerOn(redis, blocking, keys, 'held', TEST_READER_SETTINGS, {
      mode: 'each',
      handles: () => true,
      handle: async () => {
        started++;
        await released;
      },
    });
    const before = heapAfterGc();
    let grown: number;
    try {
      await reader.start();
      // Sixty groups, four slots: four handlers wait, fifty-six entries wait in their lanes.
      await waitFor(() => started === TEST_READER_SETTINGS.concurrency, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      grown = heapAfterGc() - before;
    } finally {
      release();
      await reader.stop();
      blocking.disconnect();
    }
    // The parsed events are ≈ 12 MB; keeping each reply's fields beside them held ≈ 24 MB.
    expect(grown).toBeGreaterThan(10 * 1024 * 1024);
    expect(grown).toBeLessThan(18 * 1024 * 1024);
  }, 60_000);

  it('asks an idle partition again only every few seconds, and still hands over an entry as it arrives', async () => {
    const keys = new Keyspace(`${prefix}:idle`, 2);
    const counts = { reads: 0, sweeps: 0 };
    const real = redis.duplicate();
    const blocking = {
      xreadgroup: (...args: unknown[]) => {
        counts.reads++;
        return (real.xreadgroup as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    } as unknown as Redis;
    // The janitor's XPENDING goes through `call`; everything else reaches the real connection.
    const commands = interceptCommand(redis, 'call', (call, args) => {
      if (args[0] === 'XPENDING') counts.sweeps++;
      return call(...args);
    });
    const seen: number[] = [];
    // The deployment's settings: `QUNLI_CLAIM_IDLE_MS` of 60 s and the default block.
    const settings = { ...TEST_READER_SETTINGS, claimIdleMs: 60_000, blockMs: DEFAULT_BLOCK_MS };
    const reader = readerOn(commands, blocking, keys, 'idle', settings, {
      mode: 'each',
      handles: () => true,
      handle: async () => {
        seen.push(Date.now());
      },
    });
    try {
      await reader.start();
      await new Promise((resolve) => setTimeout(resolve, DEFAULT_BLOCK_MS + 1500));
      // One read blocked for the whole block, the next is blocking now; no sweep yet (the first is due after 15 s,
      // `JANITOR_MAX_EVERY_MS`).
      expect(counts).toEqual({ reads: 2, sweeps: 0 });
      const appended = Date.now();
      await redis.xadd(keys.stream(0), '*', ...observedEntry('300400', '在吗'));
      await waitFor(() => seen.length === 1);
      expect(seen[0]! - appended).toBeLessThan(1000);
    } finally {
      await reader.stop();
      real.disconnect();
    }
  }, 30_000);

  it('in batch mode, lingering readers of several partitions read on one beat, however far apart they started (ADR 0045)', async () => {
    const partitions = 4;
    const keys = new Keyspace(prefix, partitions);
    const lingerMs = 600;
    const handled: { partition: number; at: number }[] = [];
    const connections: Redis[] = [];
    const log = { warn: () => undefined, error: () => undefined };
    const readers = Array.from({ length: partitions }, (_, partition) => {
      const blocking = redis.duplicate();
      connections.push(blocking);
      return new PartitionReader(
        redis,
        blocking,
        keys,
        'projector',
        partition,
        // A short block: between its reads a reader lingers, it does not wait inside a blocking read.
        { ...TEST_READER_SETTINGS, lingerMs, blockMs: 20 },
        {
          mode: 'batch',
          handler: {
            handleBatch: (entries: BatchEntry[]) => {
              for (const entry of entries) handled.push({ partition: entry.partition, at: performance.now() });
              return Promise.resolve();
            },
          },
        },
        new BusMetrics(new Metrics('test', false)),
        log,
      );
    });
    const append = (partition: number, text: string) =>
      redis.xadd(keys.stream(partition), '*', ...observedEntry(`30050${partition}`, text));
    try {
      // The readers start a quarter of the linger apart: a reader that lingered the whole time from its own last
      // read would go on reading at four different moments.
      for (const reader of readers) {
        await reader.start();
        await new Promise((resolve) => setTimeout(resolve, lingerMs / 4));
      }
      for (let partition = 0; partition < partitions; partition++) await append(partition, `entry ${partition}`);
      await waitFor(() => handled.length === partitions);
      expect(new Set(handled.map((h) => h.partition)).size).toBe(partitions);
      const at = handled.map((h) => h.at);
      // Together, give or take a blocking read and a loaded machine's timers; apart, they would span ≈ 450 ms.
      expect(Math.max(...at) - Math.min(...at)).toBeLessThan(lingerMs / 4);
    } finally {
      for (const reader of readers) await reader.stop();
      for (const connection of connections) connection.disconnect();
    }
  });

  it('in batch mode, a read an entry woke between two beats of a trickle waits for the next beat with what came meanwhile; the first after a quiet spell and a read on the beat go at once (ADR 0047)', async () => {
    const partitions = 3;
    const keys = new Keyspace(`${prefix}:woken`, partitions);
    const lingerMs = 600;
    const batches: { partition: number; texts: string[]; at: number }[] = [];
    const connections: Redis[] = [];
    const log = { warn: () => undefined, error: () => undefined };
    const readers = Array.from({ length: partitions }, (_, partition) => {
      const blocking = redis.duplicate();
      connections.push(blocking);
      return new PartitionReader(
        redis,
        blocking,
        keys,
        'projector',
        partition,
        // A long block: the readers wait inside their blocking reads, and each entry below wakes one.
        { ...TEST_READER_SETTINGS, lingerMs, blockMs: 10_000 },
        {
          mode: 'batch',
          handler: {
            handleBatch: (entries: BatchEntry[]) => {
              batches.push({
                partition: entries[0]!.partition,
                texts: entries.map((entry) => (entry.event.payload as { text: string }).text),
                at: performance.now(),
              });
              return Promise.resolve();
            },
          },
        },
        new BusMetrics(new Metrics('test', false)),
        log,
      );
    });
    const append = (partition: number, text: string) =>
      redis.xadd(keys.stream(partition), '*', ...observedEntry(`30060${partition}`, text));
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // How far from the nearest beat (a timer may fire a fraction of a millisecond before it).
    const offBeat = (at: number) => Math.min(at % lingerMs, lingerMs - (at % lingerMs));
    try {
      for (const reader of readers) await reader.start();
      await pause(200);
      const texts = () => batches.reduce((n, batch) => n + batch.texts.length, 0);
      const intoBeat = (share: number) => pause(lingerMs - (performance.now() % lingerMs) + lingerMs * share);

      // A third of the way into a beat, after a quiet spell: the first entry of each partition goes at once.
      await intoBeat(1 / 3);
      const quietEnd = performance.now();
      for (let partition = 0; partition < partitions; partition++) await append(partition, `first ${partition}`);
      await waitFor(() => texts() === partitions);
      for (const batch of batches) expect(batch.at - quietEnd).toBeLessThan(lingerMs / 3);
      batches.length = 0;

      // The partitions had entries a moment ago. A third of the way into the next beat, the readers have found their
      // partitions empty on it and wait in blocking reads.
      await intoBeat(1 / 3);
      await append(0, 'a');
      await pause(40);
      await append(1, 'b');
      await pause(40);
      await append(2, 'c');
      await pause(40);
      await append(0, 'd');
      await waitFor(() => texts() === 4);
      // Partition 0's read woke at 'a' and took 'd' with it at the beat; handed over at once, 'a' would have gone alone.
      expect(batches.map((batch) => [batch.partition, batch.texts])).toEqual(
        expect.arrayContaining([
          [0, ['a', 'd']],
          [1, ['b']],
          [2, ['c']],
        ]),
      );
      expect(batches).toHaveLength(3);
      // Each handed over at a beat, together; at once, they would have come a third of the way in, 40 ms apart.
      for (const batch of batches) expect(offBeat(batch.at)).toBeLessThan(lingerMs / 4);
      const at = batches.map((batch) => batch.at);
      expect(Math.max(...at) - Math.min(...at)).toBeLessThan(lingerMs / 4);

      // The readers now linger until the next beat. What comes meanwhile is read on that beat without blocking and
      // handed over at once, not held for another beat.
      await pause(lingerMs / 2 - (performance.now() % lingerMs));
      const appendedAt = performance.now();
      await append(1, 'e');
      await waitFor(() => batches.length === 4);
      expect(batches[3]!.texts).toEqual(['e']);
      expect(offBeat(batches[3]!.at)).toBeLessThan(lingerMs / 4);
      expect(batches[3]!.at - appendedAt).toBeLessThan(lingerMs);
    } finally {
      for (const reader of readers) await reader.stop();
      for (const connection of connections) connection.disconnect();
    }
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
