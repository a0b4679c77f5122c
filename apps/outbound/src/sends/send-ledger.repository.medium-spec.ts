import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { deleteKeys, testRedis, uniquePrefix } from '@app/testing';
import type { LedgerEntry } from './send-ledger.js';
import { SendLedger } from './send-ledger.repository.js';
import { SendLedgerSweeper } from './send-ledger.sweeper.js';

describe('SendLedger (real Redis)', () => {
  let redis: Redis;
  let prefix: string;
  let keys: Keyspace;
  let ledger: SendLedger;

  const old = '2020-01-01T00:00:00.000Z';
  const recent = new Date().toISOString();

  beforeAll(() => {
    redis = testRedis();
  });

  beforeEach(() => {
    prefix = uniquePrefix('ledger');
    keys = new Keyspace(prefix, 2);
    ledger = new SendLedger(redis, keys);
  });

  afterEach(async () => {
    await deleteKeys(redis, prefix);
  });

  afterAll(async () => {
    await redis.quit();
  });

  it('stores entries under <actionId>:<segment> in the partition hash', async () => {
    await ledger.write(1, 'act_x', 0, { state: 'sent', attempts: 1, onebotMessageId: '9', at: recent });
    expect(await redis.hget(keys.sendLedger(1), 'act_x:0')).toBe(
      JSON.stringify({ state: 'sent', attempts: 1, onebotMessageId: '9', at: recent }),
    );
    const [first, second] = await ledger.read(1, 'act_x', 2);
    expect(first?.entry.state).toBe('sent');
    expect(second).toBeUndefined();
  });

  it('compare-and-set succeeds only against what was read', async () => {
    const sending: LedgerEntry = { state: 'sending', attempts: 1, at: recent };
    const claimed = await ledger.compareAndSet(0, 'act_y', 0, undefined, sending);
    expect(claimed?.entry).toEqual(sending);
    expect(await ledger.compareAndSet(0, 'act_y', 0, undefined, sending)).toBeUndefined();
    expect(await ledger.compareAndSet(0, 'act_y', 0, claimed, { ...sending, state: 'unknown' })).toBeDefined();
  });

  it('refuses to interpret a corrupt entry', async () => {
    await redis.hset(keys.sendLedger(0), 'act_z:0', 'not json');
    await expect(ledger.read(0, 'act_z', 1)).rejects.toMatchObject({ code: 'SEND.LEDGER_CORRUPT' });
  });

  it('prunes old settled entries in every partition and keeps in-flight and recent ones', async () => {
    await ledger.write(0, 'a', 0, { state: 'sent', attempts: 1, onebotMessageId: '1', at: old });
    await ledger.write(0, 'a', 1, { state: 'unknown', attempts: 1, at: old });
    await ledger.write(1, 'b', 0, { state: 'failed', attempts: 3, at: old });
    await ledger.write(1, 'c', 0, { state: 'sending', attempts: 1, at: old });
    await ledger.write(1, 'd', 0, { state: 'pending', attempts: 1, at: old });
    await ledger.write(1, 'e', 0, { state: 'sent', attempts: 1, onebotMessageId: '2', at: recent });
    const sweeper = new SendLedgerSweeper(ledger, keys);
    expect(await sweeper.sweep(new Date(Date.now() - 60_000))).toBe(3);
    expect((await redis.hkeys(keys.sendLedger(0))).sort()).toEqual([]);
    expect((await redis.hkeys(keys.sendLedger(1))).sort()).toEqual(['c:0', 'd:0', 'e:0']);
  });
});
