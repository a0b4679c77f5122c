import type { Redis } from 'ioredis';
import { ConsumerGroup, EventKind, Keyspace, makeEvent, newEventId, type EventOf } from '@app/contracts';
import { entryFields } from '@app/event-bus';
import { deleteKeys, testRedis, uniquePrefix } from '@app/testing';
import { SendOrderGuard } from './send-order.guard.js';

function action(targetId: string): EventOf<'action.send'> {
  return makeEvent({
    kind: EventKind.ActionSend,
    groupId: targetId,
    source: 'test',
    payload: {
      actionId: `act_${newEventId()}_0`,
      episodeId: 'ep',
      triggerEventId: newEventId(),
      targetType: 'group',
      targetId,
      text: 'x',
    },
  });
}

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

  it('holds B back while A (same group, earlier) is pending; not for another group; not once A is acknowledged', async () => {
    const stream = keys.stream(0);
    await redis.xgroup('CREATE', stream, ConsumerGroup.Outbound, '0', 'MKSTREAM');
    const [a, other, b] = [action('30001'), action('30002'), action('30001')];
    const ids: string[] = [];
    for (const event of [a, other, b]) ids.push((await redis.xadd(stream, '*', ...entryFields(event)))!);
    // All three delivered to outbound, none acknowledged yet (A's handler failed; the bus retries it later).
    await redis.xreadgroup('GROUP', ConsumerGroup.Outbound, 'owner', 'COUNT', 10, 'STREAMS', stream, '>');
    const guard = new SendOrderGuard(redis, keys);
    const item = (event: EventOf<'action.send'>, entryId: string) => ({ event, entryId, sourcePartition: 0 });
    expect(await guard.earlierPending(item(b, ids[2]!))).toBe(true);
    expect(await guard.earlierPending(item(other, ids[1]!))).toBe(false);
    expect(await guard.earlierPending(item(a, ids[0]!))).toBe(false);
    await redis.xack(stream, ConsumerGroup.Outbound, ids[0]!);
    expect(await guard.earlierPending(item(b, ids[2]!))).toBe(false);
  });

  it('noneEarlier: true only when no entry before the reply is pending at all, whatever its group', async () => {
    const stream = keys.stream(0);
    await redis.xgroup('CREATE', stream, ConsumerGroup.Outbound, '0', 'MKSTREAM');
    const [a, other, b] = [action('30001'), action('30002'), action('30001')];
    const ids: string[] = [];
    for (const event of [a, other, b]) ids.push((await redis.xadd(stream, '*', ...entryFields(event)))!);
    await redis.xreadgroup('GROUP', ConsumerGroup.Outbound, 'owner', 'COUNT', 10, 'STREAMS', stream, '>');
    const guard = new SendOrderGuard(redis, keys);
    const item = (event: EventOf<'action.send'>, entryId: string) => ({ event, entryId, sourcePartition: 0 });
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
