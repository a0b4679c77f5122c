import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { deleteKeys, testConfig, testRedis, uniquePrefix } from '@app/testing';
import { actionSend } from './action-send.fixture.js';
import { OutboxStore, type OutboxItem } from './outbox.store.js';

function item(groupId: string, entryId: string): OutboxItem {
  return { event: actionSend(groupId), entryId, sourcePartition: 0 };
}

describe('OutboxStore (real Redis): the enqueue that claims a lone reply, the completion that ends the drain', () => {
  let redis: Redis;
  let keys: Keyspace;
  let store: OutboxStore;
  let other: OutboxStore;

  const storeFor = (instance: string, prefix: string) =>
    new OutboxStore(redis, keys, testConfig('outbound', { QUNLI_REDIS_PREFIX: prefix, QUNLI_INSTANCE_ID: instance }));

  beforeEach(() => {
    redis = testRedis();
    const prefix = uniquePrefix('outbox');
    keys = new Keyspace(prefix, 2);
    store = storeFor('outbound-a', prefix);
    other = storeFor('outbound-b', prefix);
  });

  afterEach(async () => {
    await deleteKeys(redis, keys.prefix);
    await redis.quit();
  });

  it('claims the lock only for the conversation’s only reply, only when free or ours, only when asked', async () => {
    const first = item('30001', '1-0');
    const address = store.addressOf(first.event);
    expect(await store.enqueue(first, true)).toMatchObject({ added: true, claimed: true });
    expect(await other.lock(address)).toBe(false); // the claim is the lock
    expect((await store.head(address))?.member).toBe((await store.enqueue(first, true)).member);
    // A redelivery of the same action is queued once and claims nothing.
    expect(await store.enqueue(first, true)).toMatchObject({ added: false, claimed: false });
    // A second reply of the conversation is not alone: queued, not claimed (the running drain takes it).
    expect(await store.enqueue(item('30001', '2-0'), true)).toMatchObject({ added: true, claimed: false });

    // Another instance holds this conversation: queued, not claimed.
    const elsewhere = item('30003', '3-0');
    expect(await other.lock(store.addressOf(elsewhere.event))).toBe(true);
    expect(await store.enqueue(elsewhere, true)).toMatchObject({ added: true, claimed: false });
    // Not asked (a stopping process): queued, the lock left alone.
    const unasked = item('30005', '4-0');
    expect(await store.enqueue(unasked, false)).toMatchObject({ added: true, claimed: false });
    expect(await other.lock(store.addressOf(unasked.event))).toBe(true);
  });

  it('releases the lock with the last reply, not before, and never another instance’s lock', async () => {
    const [a, b] = [item('30001', '1-0'), item('30001', '2-0')];
    const address = store.addressOf(a.event);
    const queuedA = await store.enqueue(a, true);
    const queuedB = await store.enqueue(b, true);
    expect(await store.complete(address, a.event.payload.actionId, queuedA.member)).toBe(1);
    expect(await other.lock(address)).toBe(false);
    expect(await store.complete(address, b.event.payload.actionId, queuedB.member)).toBe(0);
    expect(await redis.sismember(keys.outboxConversations(address.partition), '30001')).toBe(0);
    expect(await other.lock(address)).toBe(true);

    // Emptied by a process that does not hold the lock: the holder's lock stays.
    const c = item('30001', '3-0');
    const queuedC = await store.enqueue(c, true);
    expect(queuedC.claimed).toBe(false);
    expect(await store.complete(address, c.event.payload.actionId, queuedC.member)).toBe(0);
    expect(await store.lock(address)).toBe(false);
  });

  it('lists every partition’s conversations with queued replies', async () => {
    const replies = ['30001', '30002', '30003', '30004'].map((g, i) => item(g, `${i + 1}-0`));
    for (const reply of replies) await store.enqueue(reply);
    const expected = replies.map((reply) => store.addressOf(reply.event));
    expect(new Set(expected.map((a) => a.partition)).size).toBe(2);
    const listed = await store.allConversations();
    expect(listed).toHaveLength(4);
    expect(listed).toEqual(expect.arrayContaining(expected));
  });
});
