import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { Metrics } from '@app/platform';
import { deleteKeys, testRedis, uniquePrefix } from '@app/testing';
import { BusMetrics } from './bus-metrics.js';
import { PartitionReader, type ReaderSettings } from './partition-reader.js';

const SETTINGS: ReaderSettings = {
  maxDeliveries: 3,
  claimIdleMs: 5000,
  concurrency: 4,
  urgentReserve: 1,
  readCount: 64,
  blockMs: 100,
  retryBaseMs: 50,
  retryMaxMs: 200,
  maxHeld: 1000,
  laneBodies: 64,
};

describe('PartitionReader.stop', () => {
  let redis: Redis;
  let prefix: string;

  beforeAll(() => {
    redis = testRedis();
    prefix = uniquePrefix('reader-stop');
  });

  afterAll(async () => {
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  it('returns while a blocking read never settles (ioredis strands a command cut off by a Redis restart)', async () => {
    let reads = 0;
    // The blocking connection as ioredis leaves it after a drop and a disconnect mid-reconnect: a pending read
    // that neither resolves nor rejects.
    const stranded = {
      xreadgroup: () => {
        reads++;
        return new Promise(() => undefined);
      },
    } as unknown as Redis;
    const reader = new PartitionReader(
      redis,
      stranded,
      new Keyspace(prefix, 2),
      'test-group',
      0,
      SETTINGS,
      { mode: 'each', handles: () => true, handle: async () => undefined },
      new BusMetrics(new Metrics('test', false)),
      { warn: () => undefined, error: () => undefined },
    );
    await reader.start();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(reads).toBe(1);
    const stopped = await Promise.race([
      reader.stop().then(() => 'stopped'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3000)),
    ]);
    expect(stopped).toBe('stopped');
  });
});
