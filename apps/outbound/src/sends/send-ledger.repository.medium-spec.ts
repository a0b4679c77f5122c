import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { deleteKeys, testRedis, uniquePrefix } from '@app/testing';
import type { PartEntry } from './send-ledger.js';
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

  it('compare-and-set succeeds only against what was read, under <actionId>:<part>', async () => {
    const sending: PartEntry = { state: 'sending', attempts: 1, at: recent };
    const field = SendLedger.partField('act_y', 0);
    const claimed = await ledger.compareAndSet(0, field, undefined, sending);
    expect(claimed?.value).toEqual(sending);
    expect(await ledger.compareAndSet(0, field, undefined, sending)).toBeUndefined();
    expect(await ledger.compareAndSet(0, field, claimed, { ...sending, state: 'unsure' })).toBeDefined();
    expect((await ledger.part(0, 'act_y', 0))?.value.state).toBe('unsure');
    expect(await redis.hexists(keys.sendLedger(0), 'act_y:0')).toBe(1);
  });

  it('claims a part unless the trigger was recalled, in one step, against what was read', async () => {
    const sending: PartEntry = { state: 'sending', attempts: 1, at: recent };
    const field = SendLedger.partField('act_r', 0);
    const recalled = { key: keys.recalledTriggers(0), trigger: 'evt_trigger' };
    const claimed = await ledger.compareAndSetUnlessRecalled(0, field, undefined, sending, recalled);
    expect(claimed).toMatchObject({ value: sending });
    // Changed under us: nothing written, as compareAndSet.
    expect(await ledger.compareAndSetUnlessRecalled(0, field, undefined, sending, recalled)).toBeUndefined();
    await redis.zadd(recalled.key, 1, 'evt_trigger');
    const other = SendLedger.partField('act_r', 1);
    expect(await ledger.compareAndSetUnlessRecalled(0, other, undefined, sending, recalled)).toBe('recalled');
    expect(await redis.hexists(keys.sendLedger(0), other)).toBe(0);
  });

  it('reads an action’s done and plan in one go, parsed by the same rules as done() and plan()', async () => {
    expect(await ledger.head(0, 'act_h')).toEqual({ done: null, plan: null });
    const plan = JSON.stringify({ form: 'text', parts: ['a'], polished: false, at: recent });
    await redis.hset(keys.sendLedger(0), 'act_h:plan', plan);
    const head = await ledger.head(0, 'act_h');
    expect(head).toEqual({ done: null, plan });
    expect(SendLedger.parsePlan('act_h', head.plan)?.value.parts).toEqual(['a']);
    expect(SendLedger.parseDone('act_h', head.done)).toBeUndefined();
    await redis.hset(keys.sendLedger(0), 'act_h:done', 'not json');
    expect(() => SendLedger.parseDone('act_h', 'not json')).toThrow(
      expect.objectContaining({ code: 'SEND.LEDGER_CORRUPT' }),
    );
  });

  it('refuses to interpret a corrupt entry', async () => {
    await redis.hset(keys.sendLedger(0), 'act_z:0', 'not json');
    await expect(ledger.part(0, 'act_z', 0)).rejects.toMatchObject({ code: 'SEND.LEDGER_CORRUPT' });
  });

  it('prunes actions finished long ago, in every partition, and keeps unfinished and recent ones', async () => {
    const put = (p: number, field: string, value: unknown) =>
      redis.hset(keys.sendLedger(p), field, JSON.stringify(value));
    await put(0, 'a:plan', { form: 'text', parts: ['x', 'y'], polished: false, at: old });
    await put(0, 'a:0', { state: 'sent', attempts: 1, onebotMessageId: '1', at: old });
    await put(0, 'a:1', { state: 'unknown', attempts: 1, at: old });
    await put(0, 'a:done', { outcome: 'unknown', at: old });
    await put(1, 'c:plan', { form: 'text', parts: ['x'], polished: false, at: old });
    await put(1, 'c:0', { state: 'sending', attempts: 1, at: old });
    await put(1, 'e:0', { state: 'sent', attempts: 1, onebotMessageId: '2', at: recent });
    await put(1, 'e:done', { outcome: 'delivered', at: recent });
    const sweeper = new SendLedgerSweeper(ledger, keys);
    expect(await sweeper.sweep(new Date(Date.now() - 60_000))).toBe(4);
    expect(await redis.hkeys(keys.sendLedger(0))).toEqual([]);
    expect((await redis.hkeys(keys.sendLedger(1))).sort()).toEqual(['c:0', 'c:plan', 'e:0', 'e:done']);
  });
});
