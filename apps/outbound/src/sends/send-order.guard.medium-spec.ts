import type { Redis } from 'ioredis';
import { ConsumerGroup, Keyspace, type EventOf } from '@app/contracts';
import { entryFields } from '@app/event-bus';
import { deleteKeys, testRedis, uniquePrefix } from '@app/testing';
import { actionSend } from './action-send.fixture.js';
import { SendOrderGuard } from './send-order.guard.js';

describe('SendOrderGuard (real Redis): a reply waits while an earlier one of its group is still being retried by the bus', () => {
  let redis: Redis;
  let keys: Keyspace;

  beforeEach(() => {
    redis = testRedis();
    keys = new Keyspace(uniquePrefix('order'), 1);
  });

  afterEach(async () => {
    await deleteKeys(redis, keys.prefix);
    await redis.quit();
  });

  /** A and B of group 30001 with another group's reply between them, all delivered to outbound, none acknowledged. */
  async function deliveredTrio() {
    const stream = keys.stream(0);
    await redis.xgroup('CREATE', stream, ConsumerGroup.Outbound, '0', 'MKSTREAM');
    const [a, other, b] = [actionSend('30001'), actionSend('30002'), actionSend('30001')];
    const ids: string[] = [];
    for (const event of [a, other, b]) ids.push((await redis.xadd(stream, '*', ...entryFields(event)))!);
    // As when A's handler failed and the bus retries it later.
    await redis.xreadgroup('GROUP', ConsumerGroup.Outbound, 'owner', 'COUNT', 10, 'STREAMS', stream, '>');
    const guard = new SendOrderGuard(redis, keys);
    const item = (event: EventOf<'action.send'>, entryId: string) => ({ event, entryId, sourcePartition: 0 });
    return { stream, a, other, b, ids, guard, item };
  }

  it('holds B back while A (same group, earlier) is pending; not for another group; not once A is acknowledged', async () => {
    const { stream, a, other, b, ids, guard, item } = await deliveredTrio();
    expect(await guard.earlierPending(item(b, ids[2]!))).toBe(true);
    expect(await guard.earlierPending(item(other, ids[1]!))).toBe(false);
    expect(await guard.earlierPending(item(a, ids[0]!))).toBe(false);
    await redis.xack(stream, ConsumerGroup.Outbound, ids[0]!);
    expect(await guard.earlierPending(item(b, ids[2]!))).toBe(false);
  });

  it('noneEarlier: true only when no entry before the reply is pending at all, whatever its group', async () => {
    const { stream, a, b, ids, guard, item } = await deliveredTrio();
    expect(await guard.noneEarlier(item(a, ids[0]!))).toBe(true);
    expect(await guard.noneEarlier(item(b, ids[2]!))).toBe(false);
    await redis.xack(stream, ConsumerGroup.Outbound, ids[0]!);
    // Another group's entry is still pending: not "none", though earlierPending would let B go.
    expect(await guard.noneEarlier(item(b, ids[2]!))).toBe(false);
    expect(await guard.earlierPending(item(b, ids[2]!))).toBe(false);
    await redis.xack(stream, ConsumerGroup.Outbound, ids[1]!);
    expect(await guard.noneEarlier(item(b, ids[2]!))).toBe(true);
  });
});
