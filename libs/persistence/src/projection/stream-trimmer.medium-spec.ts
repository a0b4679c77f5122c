import type { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { ConsumerGroup, Keyspace } from '@app/contracts';
import { Metrics } from '@app/platform';
import { deleteKeys, testRedis, uniquePrefix, createTestDatabase, type TestDatabase } from '@app/testing';
import { dataSourceOptions } from '../data-source.js';
import { StreamTrimmer } from './stream-trimmer.js';

/** Entry `i` of a test stream: explicit, old ids, so the retention window never protects them. */
const idOf = (i: number) => `${1_000_000 + i}-0`;

describe('the stream trimmer on real Redis and Postgres', () => {
  let database: TestDatabase;
  let db: DataSource;
  let redis: Redis;
  let keys: Keyspace;
  let metrics: Metrics;
  let trimmer: StreamTrimmer;

  async function fill(partition: number, count: number, id: (i: number) => string = idOf): Promise<string> {
    const key = keys.stream(partition);
    const tx = redis.multi();
    for (let i = 0; i < count; i++) tx.xadd(key, id(i), 'k', 'message.observed', 'e', '{}');
    await tx.exec();
    return key;
  }

  async function consume(key: string, group: string, count: number, keepPending: number[] = []): Promise<void> {
    await redis.xgroup('CREATE', key, group, '0');
    const reply = (await redis.xreadgroup('GROUP', group, 'c1', 'COUNT', count, 'STREAMS', key, '>')) as
      [string, [string, string[]][]][] | null;
    const ids = reply![0]![1].map(([id]) => id);
    const acked = ids.filter((id) => !keepPending.some((i) => idOf(i) === id));
    if (acked.length > 0) await redis.xack(key, group, ...acked);
  }

  async function checkpoint(partition: number, lastEntryId: string): Promise<void> {
    await db.query(
      `INSERT INTO projection_checkpoints (projector, partition, last_entry_id, last_event_id, events_applied, updated_at)
       VALUES ($1, $2, $3, 'e', 1, now())
       ON CONFLICT (projector, partition) DO UPDATE SET last_entry_id = EXCLUDED.last_entry_id`,
      [ConsumerGroup.Projector, partition, lastEntryId],
    );
  }

  async function firstId(key: string): Promise<string> {
    const [[id]] = (await redis.xrange(key, '-', '+', 'COUNT', 1)) as [[string, string[]]];
    return id;
  }

  const below = (a: string, b: string) => Number(a.split('-')[0]) <= Number(b.split('-')[0]);

  beforeAll(async () => {
    database = await createTestDatabase('trimmer');
    db = await new DataSource(dataSourceOptions(database.url)).initialize();
    redis = testRedis();
    keys = new Keyspace(uniquePrefix('trim'), 4);
    metrics = new Metrics('test', false);
    trimmer = new StreamTrimmer(redis, keys, db, metrics);
  });

  afterAll(async () => {
    await deleteKeys(redis, keys.prefix);
    redis.disconnect();
    await db?.destroy();
    await database?.drop();
  });

  it('trims up to the oldest entry anyone still needs, never further', async () => {
    const key = await fill(0, 1000);
    await consume(key, ConsumerGroup.Projector, 700);
    await consume(key, ConsumerGroup.Scheduler, 800, [300]);
    await checkpoint(0, idOf(600));

    const first = await trimmer.trimOnce();
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(300);
    expect(await redis.xlen(key)).toBe(1000 - first);
    expect(below(await firstId(key), idOf(300))).toBe(true);

    // The scheduler acknowledges its straggler: now the projector checkpoint is the limit.
    await redis.xack(key, ConsumerGroup.Scheduler, idOf(300));
    const second = await trimmer.trimOnce();
    expect(second).toBeGreaterThan(0);
    expect(first + second).toBeLessThanOrEqual(600);
    expect(below(await firstId(key), idOf(600))).toBe(true);

    const counted = await metrics.registry.getSingleMetric('qunli_stream_trimmed_total')!.get();
    expect(counted.values[0]!.value).toBe(first + second);
  });

  it('leaves a partition alone until the projector has archived something from it', async () => {
    const key = await fill(1, 500);
    expect(await trimmer.trimOnce()).toBe(0);
    expect(await redis.xlen(key)).toBe(500);
  });

  it('keeps the last ten minutes even when everything was archived and acknowledged', async () => {
    const now = Date.now();
    const key = await fill(2, 500, (i) => `${now - 5 * 60_000 + i}-0`);
    await checkpoint(2, `${now}-0`);
    expect(await trimmer.trimOnce(now)).toBe(0);
    expect(await redis.xlen(key)).toBe(500);
    // Twenty minutes later the same entries are fair game.
    expect(await trimmer.trimOnce(now + 20 * 60_000)).toBeGreaterThan(0);
  });
});
