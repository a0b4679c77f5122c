import type { Redis } from 'ioredis';
import { ConsumerGroup, EventKind, Keyspace, makeEvent, type EventEnvelope } from '@app/contracts';
import { Metrics } from '@app/platform';
import { deleteKeys, sampleMessage, testRedis, uniquePrefix } from '@app/testing';
import { BusMetrics } from './bus-metrics.js';
import { sealedFields, sealEnvelope } from './entry-seal.js';
import { EventLog } from './event-log.js';
import { PartitionReader } from './partition-reader.js';
import { TEST_READER_SETTINGS } from './reader-settings.fixture.js';
import type { StreamContext } from './stream-context.js';

/*
 * ADR 0044: a writer that appends only kinds a per-event group does not handle moves that group past its entries,
 * when the group had read the whole stream; a group still behind, or one that handles an appended kind, reads them
 * as before.
 */

let redis: Redis;
let prefix: string;
let case_ = 0;
const readers: { reader: PartitionReader; blocking: Redis }[] = [];

beforeAll(() => {
  redis = testRedis();
  prefix = uniquePrefix('passover');
});

afterEach(async () => {
  for (const { reader, blocking } of readers.splice(0)) {
    await reader.stop();
    blocking.disconnect();
  }
});

afterAll(async () => {
  await deleteKeys(redis, prefix);
  redis.disconnect();
});

interface GroupInfo {
  lastDelivered: string;
  entriesRead: number | null;
  lag: number | null;
  pending: number;
}

async function groups(stream: string): Promise<Map<string, GroupInfo>> {
  const rows = (await redis.xinfo('GROUPS', stream)) as (string | number | null)[][];
  const out = new Map<string, GroupInfo>();
  for (const row of rows) {
    const f = new Map<string, string | number | null>();
    for (let i = 0; i < row.length; i += 2) f.set(String(row[i]), row[i + 1] ?? null);
    out.set(String(f.get('name')), {
      lastDelivered: String(f.get('last-delivered-id')),
      entriesRead: f.get('entries-read') as number | null,
      lag: f.get('lag') as number | null,
      pending: Number(f.get('pending')),
    });
  }
  return out;
}

/** Entries `group` gets when it reads now (and so has delivered to it). */
async function readNew(stream: string, group: string): Promise<string[]> {
  const reply = (await redis.xreadgroup('GROUP', group, 'c', 'COUNT', 100, 'STREAMS', stream, '>')) as
    [string, [string, string[]][]][] | null;
  return (reply?.[0]?.[1] ?? []).map(([, fields]) => fields[fields.indexOf('k') + 1]!);
}

function message(text: string): EventEnvelope {
  return makeEvent({
    kind: EventKind.MessageObserved,
    groupId: '300001',
    source: 'ingress',
    payload: sampleMessage(text),
  });
}

function sendOf(trigger: EventEnvelope): EventEnvelope {
  return makeEvent({
    kind: EventKind.ActionSend,
    groupId: '300001',
    source: 'cognition',
    cause: trigger,
    payload: {
      actionId: `act_${++case_}_0`,
      episodeId: 'ep_1',
      triggerEventId: trigger.id,
      targetType: 'group',
      targetId: '300001',
      text: '好的',
    },
  });
}

function decisionOf(subject: EventEnvelope): EventEnvelope {
  return makeEvent({
    kind: EventKind.DecisionMade,
    groupId: subject.groupId,
    source: 'scheduler',
    cause: subject,
    payload: { subjectEventId: subject.id, outcome: 'skip', reason: 'ambient', features: {}, transitions: [] },
  });
}

describe('passing groups over entries they would only skip', () => {
  it('moves caught-up groups past an append they do not handle, and no group that is behind or wants it', async () => {
    const keys = new Keyspace(`${prefix}:${++case_}`, 1);
    const stream = keys.stream(0);
    const log = new EventLog(redis, keys, new Metrics('test', false));
    const first = message('早');
    await redis.xadd(stream, '*', ...sealedFields(sealEnvelope(first)));
    for (const group of [ConsumerGroup.Outbound, ConsumerGroup.Scheduler, ConsumerGroup.Memory]) {
      await redis.xgroup('CREATE', stream, group, '0');
      expect(await readNew(stream, group)).toEqual([EventKind.MessageObserved]);
    }
    // Appended without a script: outbound and the scheduler read it too, the memory group has not yet.
    await redis.xadd(stream, '*', ...sealedFields(sealEnvelope(message('早上好'))));
    expect(await readNew(stream, ConsumerGroup.Outbound)).toEqual([EventKind.MessageObserved]);
    expect(await readNew(stream, ConsumerGroup.Scheduler)).toEqual([EventKind.MessageObserved]);

    // None of the three handles a decision: the two that had read everything are moved past it, with their lag
    // kept exact; the memory group, one entry behind, is not (moving it would pass over the entry it has not read).
    const decision = await log.appendOnce(decisionOf(first), 'd1', 60);
    let info = await groups(stream);
    for (const group of [ConsumerGroup.Outbound, ConsumerGroup.Scheduler]) {
      expect(info.get(group)).toEqual({ lastDelivered: decision.id, entriesRead: 3, lag: 0, pending: 2 });
      expect(await readNew(stream, group)).toEqual([]);
    }
    expect(info.get(ConsumerGroup.Memory)).toMatchObject({ entriesRead: 1, lag: 2 });
    expect(await readNew(stream, ConsumerGroup.Memory)).toEqual([EventKind.MessageObserved, EventKind.DecisionMade]);

    // A message: outbound is moved past it; the scheduler and the memory group handle it and read it.
    const observed = await log.appendOnce(message('有人吗'), 'm2', 60);
    info = await groups(stream);
    expect(info.get(ConsumerGroup.Outbound)).toMatchObject({ lastDelivered: observed.id, lag: 0 });
    expect(await readNew(stream, ConsumerGroup.Outbound)).toEqual([]);
    expect(await readNew(stream, ConsumerGroup.Scheduler)).toEqual([EventKind.MessageObserved]);
    expect(await readNew(stream, ConsumerGroup.Memory)).toEqual([EventKind.MessageObserved]);

    // A kind outbound handles is delivered to it as before.
    await log.appendOnce(sendOf(first), 's1', 60);
    expect((await groups(stream)).get(ConsumerGroup.Outbound)!.lag).toBe(1);
    expect(await readNew(stream, ConsumerGroup.Outbound)).toEqual([EventKind.ActionSend]);
  });

  it("moves the committing group past its own decision, so its reader never reads it; the log's other readers do", async () => {
    const keys = new Keyspace(`${prefix}:${++case_}`, 1);
    const stream = keys.stream(0);
    const seen: string[] = [];
    const decided: string[] = [];
    const blocking = redis.duplicate();
    const reader = new PartitionReader(
      redis,
      blocking,
      keys,
      ConsumerGroup.Scheduler,
      0,
      TEST_READER_SETTINGS,
      {
        mode: 'each',
        handles: (kind) => {
          seen.push(kind);
          return kind === EventKind.MessageObserved;
        },
        handle: async (event: EventEnvelope, ctx: StreamContext) => {
          ctx.publish(decisionOf(event));
          decided.push(event.id);
        },
      },
      new BusMetrics(new Metrics('test', false)),
      { warn: () => undefined, error: () => undefined },
    );
    await reader.start();
    readers.push({ reader, blocking });
    // A batch group (the projector) reads the whole log and is never passed over.
    await redis.xgroup('CREATE', stream, ConsumerGroup.Projector, '0');

    const messages = [message('一'), message('二'), message('三')];
    for (const m of messages) {
      await redis.xadd(stream, '*', ...sealedFields(sealEnvelope(m)));
      const deadline = Date.now() + 3000;
      while (!decided.includes(m.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    }
    expect(decided).toEqual(messages.map((m) => m.id));
    // Give a wrongly woken reader the time to read a decision.
    await new Promise((resolve) => setTimeout(resolve, 300));

    expect(seen).not.toContain(EventKind.DecisionMade);
    const scheduler = (await groups(stream)).get(ConsumerGroup.Scheduler)!;
    const last = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]!;
    expect(last[1][last[1].indexOf('k') + 1]).toBe(EventKind.DecisionMade);
    expect(scheduler).toEqual({ lastDelivered: last[0], entriesRead: 6, lag: 0, pending: 0 });
    expect(await readNew(stream, ConsumerGroup.Projector)).toEqual([
      EventKind.MessageObserved,
      EventKind.DecisionMade,
      EventKind.MessageObserved,
      EventKind.DecisionMade,
      EventKind.MessageObserved,
      EventKind.DecisionMade,
    ]);
  });
});
