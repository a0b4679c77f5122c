import type { Redis } from 'ioredis';
import { ConsumerGroup, EventKind, Keyspace, makeEvent, type EventEnvelope } from '@app/contracts';
import { Metrics } from '@app/platform';
import { deleteKeys, interceptCommand, sampleMessage, testRedis, uniquePrefix } from '@app/testing';
import { BusMetrics } from './bus-metrics.js';
import { sealedFields, sealEnvelope } from './entry-seal.js';
import { EventLog } from './event-log.js';
import { PartitionReader } from './partition-reader.js';
import { TEST_READER_SETTINGS } from './reader-settings.fixture.js';
import { StreamWakes } from './stream-wakes.js';

/*
 * A consumer group that wants only rare kinds (outbound: sends and recalls) rests between reads while the log
 * holds nothing for it, and the writers of its kinds wake it: it reads once per rest instead of once per entry,
 * and a send is still read at once.
 */

const GROUP = ConsumerGroup.Outbound;

let redis: Redis;
let prefix: string;
let running: { reader: PartitionReader; wakes: StreamWakes; blocking: Redis }[] = [];

beforeAll(() => {
  redis = testRedis();
  prefix = uniquePrefix('wakes');
});

afterEach(async () => {
  for (const { reader, wakes, blocking } of running) {
    await reader.stop();
    await wakes.stop();
    blocking.disconnect();
  }
  running = [];
});

afterAll(async () => {
  await deleteKeys(redis, prefix);
  redis.disconnect();
});

let case_ = 0;

/** A reader of partition 0 for outbound's kinds; counts its reads and records the sends it handled. */
async function outboundReader(
  idleLingerMs: number,
  options: {
    /** The reader's XACKs reach Redis at once, but their replies come back this much later. */
    ackReplyDelayMs?: number;
    /** Run inside the handler of each send. */
    onSend?: (event: EventEnvelope) => Promise<void>;
  } = {},
): Promise<{
  keys: Keyspace;
  log: EventLog;
  reads: () => number;
  handled: string[];
}> {
  const keys = new Keyspace(`${prefix}:${++case_}`, 1);
  const handled: string[] = [];
  let reads = 0;
  const real = redis.duplicate();
  const blocking = interceptCommand(real, 'xreadgroup', (xreadgroup, args) => {
    reads++;
    return xreadgroup(...args);
  });
  const delay = options.ackReplyDelayMs;
  const commands =
    delay === undefined
      ? redis
      : interceptCommand(redis, 'xack', async (xack, args) => {
          const reply = await xack(...args);
          // Unref: an acknowledgement still held back when the suite ends must not keep the process up.
          await new Promise((resolve) => setTimeout(resolve, delay).unref());
          return reply;
        });
  const wakes = new StreamWakes(redis, keys.streamWakeChannel(GROUP), () => undefined);
  await wakes.start();
  const reader = new PartitionReader(
    commands,
    blocking,
    keys,
    GROUP,
    0,
    { ...TEST_READER_SETTINGS, idleLingerMs },
    {
      mode: 'each',
      handles: (kind) => kind === EventKind.ActionSend,
      handle: async (event: EventEnvelope) => {
        await options.onSend?.(event);
        handled.push(event.id);
      },
    },
    new BusMetrics(new Metrics('test', false)),
    { warn: () => undefined, error: () => undefined },
    undefined,
    undefined,
    wakes,
  );
  await reader.start();
  running.push({ reader, wakes, blocking: real });
  return { keys, log: new EventLog(redis, keys, new Metrics('test', false)), reads: () => reads, handled };
}

function chatter(keys: Keyspace, text: string): Promise<string> {
  const event = makeEvent({
    kind: EventKind.MessageObserved,
    groupId: '300001',
    source: 'test',
    payload: sampleMessage(text),
  });
  return redis.xadd(keys.stream(0), '*', ...sealedFields(sealEnvelope(event))) as Promise<string>;
}

function send(): EventEnvelope {
  return makeEvent({
    kind: EventKind.ActionSend,
    groupId: '300001',
    source: 'cognition',
    payload: {
      actionId: `act_${++case_}_0`,
      episodeId: 'ep_1',
      triggerEventId: 'trigger',
      targetType: 'group',
      targetId: '300001',
      text: '好的',
    },
  });
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

describe('a consumer group that rests between reads', () => {
  it('reads once per rest while the log holds only what it skips, not once per entry', async () => {
    const resting = await outboundReader(1000);
    const eager = await outboundReader(0);
    for (let i = 0; i < 30; i++) {
      await chatter(resting.keys, `闲聊${i}`);
      await chatter(eager.keys, `闲聊${i}`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    expect(resting.reads()).toBeLessThanOrEqual(4);
    expect(eager.reads()).toBeGreaterThan(10);
  });

  it('reads a send at once when its writer wakes the partition, however long the rest', async () => {
    const { keys, log, handled } = await outboundReader(10_000);
    await chatter(keys, '有人吗');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const action = send();
    await log.append(action);
    expect(await until(() => handled.includes(action.id), 3000)).toBe(true);
  });

  it('reads a send nobody woke it for once its rest is up', async () => {
    const { keys, handled } = await outboundReader(300);
    await chatter(keys, '有人吗');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const action = send();
    await redis.xadd(keys.stream(0), '*', ...sealedFields(sealEnvelope(action)));
    expect(await until(() => handled.includes(action.id), 3000)).toBe(true);
  });

  it("handles a send behind skipped entries without waiting for their XACK's reply, and never sees them pending", async () => {
    let pendingBefore: number | undefined;
    let handledAt = 0;
    let sendEntryId = '';
    let stream = '';
    const { keys, handled } = await outboundReader(10_000, {
      ackReplyDelayMs: 1500,
      onSend: async () => {
        handledAt = Date.now();
        // The send-order guard's question: is any entry before this one still pending for the group?
        pendingBefore = (await redis.xpending(stream, GROUP, '-', `(${sendEntryId}`, 10)).length;
      },
    });
    stream = keys.stream(0);
    // All three land in one read: the chatter is skipped, the send handled.
    await chatter(keys, '有人吗');
    await chatter(keys, '在吗');
    const action = send();
    sendEntryId = (await redis.xadd(stream, '*', ...sealedFields(sealEnvelope(action))))!;
    const appended = Date.now();
    await redis.publish(keys.streamWakeChannel(GROUP), '0');
    expect(await until(() => handled.includes(action.id), 3000)).toBe(true);
    expect(handledAt - appended).toBeLessThan(1000);
    expect(pendingBefore).toBe(0);
  });
});
