import { Controller, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import {
  EventKind,
  Keyspace,
  makeEvent,
  PRIORITY,
  type EventEnvelope,
  type EventOf,
  type MessagePayload,
} from '@app/contracts';
import { PlatformModule } from '@app/platform';
import { deleteKeys, sampleMessage, testConfig, testRedis, uniquePrefix } from '@app/testing';
import type { BatchEntry } from './consumer-types.js';
import { EventBusModule } from './event-bus.module.js';
import { EventLog } from './event-log.js';
import { CONSUMER, INBOX_SIZE } from './partition-reader.js';
import { connectStreamConsumer, StreamConsumers } from './stream-consumers.js';
import { StreamContext } from './stream-context.js';
import { QunliError } from '@app/contracts';

const GROUP = 'scheduler';

function observed(groupId: string, text: string, priority?: number): EventOf<'message.observed'> {
  return makeEvent({
    kind: EventKind.MessageObserved,
    groupId,
    payload: sampleMessage(text),
    source: 'test',
    ...(priority !== undefined ? { priority } : {}),
  });
}

/** What the test handler saw and did; behaviour per message text. */
class Recorder {
  seen: { text: string; deliveries: number; partition: number }[] = [];
  gate: Promise<void> | undefined;
  /** Text → how many times its handler fails before it succeeds. */
  flaky = new Map<string, number>();
}
const recorder = new Recorder();

@Controller()
class TestConsumer {
  @EventPattern<string>(EventKind.MessageObserved)
  async onMessage(@Payload() event: EventOf<'message.observed'>, @Ctx() ctx: StreamContext): Promise<void> {
    const text = event.payload.text;
    recorder.seen.push({ text, deliveries: ctx.deliveries, partition: ctx.partition });
    if (text.startsWith('poison')) throw new Error(`cannot handle ${text}`);
    if (text.startsWith('outage')) {
      throw new QunliError('TEST.OUTAGE', 'dependency down', { transient: true });
    }
    if (text.startsWith('slow')) await recorder.gate;
    const failing = recorder.flaky.get(text) ?? 0;
    if (failing > 0) {
      recorder.flaky.set(text, failing - 1);
      throw new Error(`flaky ${text}`);
    }
    ctx.stage('RPUSH', [`${ctx.keys.prefix}:effects:{p${ctx.partition}}`], text);
    ctx.publish(
      makeEvent({
        kind: EventKind.DecisionMade,
        groupId: event.groupId,
        source: 'test',
        cause: event,
        payload: { subjectEventId: event.id, outcome: 'skip', reason: `seen ${text}`, features: {}, transitions: [] },
      }),
    );
  }
}

describe('event bus on real Redis', () => {
  let redis: Redis;
  let prefix: string;
  const apps: INestApplication[] = [];
  const PARTITIONS = 4;

  function env(extra: Record<string, string | number> = {}) {
    return {
      QUNLI_REDIS_PREFIX: prefix,
      QUNLI_PARTITIONS: PARTITIONS,
      QUNLI_MAX_DELIVERIES: 3,
      QUNLI_CLAIM_IDLE_MS: 200,
      QUNLI_LEASE_MS: 1500,
      QUNLI_RETRY_BASE_MS: 50,
      QUNLI_RETRY_MAX_MS: 200,
      ...extra,
    };
  }

  async function startApp(
    instance: string,
    extra: Record<string, string | number> = {},
    options: { concurrency?: number } = {},
  ): Promise<INestApplication> {
    const config = testConfig('scheduler', env({ QUNLI_INSTANCE_ID: instance, ...extra }));
    @Module({
      imports: [PlatformModule.forApp('scheduler', { config, withoutDefaultMetrics: true }), EventBusModule.forRoot()],
      controllers: [TestConsumer],
    })
    class TestModule {}
    const app = await NestFactory.create(TestModule, {
      logger: process.env.BUS_TEST_LOGS ? ['error', 'warn', 'log'] : false,
    });
    connectStreamConsumer(app, GROUP, { blockMs: 100, ...options });
    await app.startAllMicroservices();
    await app.init();
    apps.push(app);
    return app;
  }

  async function stopApp(app: INestApplication): Promise<void> {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  }

  async function until(predicate: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await predicate())) {
      if (Date.now() > deadline) throw new Error('condition not reached in time');
      await sleep(20);
    }
  }

  const keys = () => new Keyspace(prefix, PARTITIONS);
  /** Another group id that hashes to the same partition as `groupId`. */
  function groupInSamePartition(groupId: string): string {
    const k = keys();
    for (let n = Number(groupId) + 1; ; n++) if (k.partitionOf(String(n)) === k.partitionOf(groupId)) return String(n);
  }
  const effects = (partition: number) => redis.lrange(`${prefix}:effects:{p${partition}}`, 0, -1);

  async function publishedDecisions(partition: number): Promise<string[]> {
    const entries = await redis.xrange(keys().stream(partition), '-', '+');
    return entries
      .filter(([, fields]) => fields[1] === EventKind.DecisionMade)
      .map(([, fields]) => (JSON.parse(fields[3]!) as EventEnvelope<{ reason: string }>).payload.reason);
  }

  beforeEach(() => {
    prefix = uniquePrefix('bus');
    recorder.seen = [];
    recorder.gate = undefined;
    recorder.flaky.clear();
    redis = testRedis();
  });

  afterEach(async () => {
    for (const app of [...apps]) await stopApp(app);
    await deleteKeys(redis, prefix);
    await redis.quit();
  });

  it('handles each event once, in order per group, and commits published events with the ack', async () => {
    const app = await startApp('a');
    const log = app.get(EventLog);
    const g = '30001';
    for (const text of ['one', 'two', 'three']) await log.append(observed(g, text));
    const p = keys().partitionOf(g);
    await until(async () => (await effects(p)).length === 3);
    expect(await effects(p)).toEqual(['one', 'two', 'three']);
    await until(async () => (await publishedDecisions(p)).length === 3);
    expect(await publishedDecisions(p)).toEqual(['seen one', 'seen two', 'seen three']);
    await until(async () => ((await redis.xpending(keys().stream(p), GROUP)) as [number])[0] === 0);
  });

  it('trims the inbox to its bound after its own commits, and leaves an inbox it did not add to alone', async () => {
    const g = '30011';
    const p = keys().partitionOf(g);
    const inbox = keys().inbox(p, GROUP);
    const seed = async (from: number, count: number) => {
      for (let i = from; i < from + count; i += 1000) {
        const args: (string | number)[] = [];
        for (let j = i; j < Math.min(i + 1000, from + count); j++) args.push(j, `old-${j}`);
        await redis.zadd(inbox, ...args);
      }
    };
    await seed(0, INBOX_SIZE + 10);
    const app = await startApp('a');
    const log = app.get(EventLog);
    // The first sweep trims what a previous owner left. Wait for it: a commit that lands while it runs sets the
    // reader's flag again after the sweep cleared it, and the next sweep would then trim the growth seeded below.
    await until(async () => (await redis.zcard(inbox)) === INBOX_SIZE);
    await log.append(observed(g, 'one'));
    await until(async () => (await effects(p)).length === 1);
    await until(async () => (await redis.zcard(inbox)) === INBOX_SIZE);
    // Grown behind the reader's back (a previous owner): no commit of this reader since, so no trim.
    await seed(INBOX_SIZE + 10, 50);
    await sleep(400); // the janitor runs every 50 ms here
    expect(await redis.zcard(inbox)).toBe(INBOX_SIZE + 50);
    const two = observed(g, 'two');
    await log.append(two);
    await until(async () => (await redis.zcard(inbox)) === INBOX_SIZE);
    // The oldest ids go, the one just committed stays.
    expect(await redis.zscore(inbox, two.id)).not.toBeNull();
    expect(await redis.zscore(inbox, 'old-0')).toBeNull();
  });

  it('re-reads its own pending entries on start (a consumer that died after reading)', async () => {
    const g = '30002';
    const k = keys();
    const p = k.partitionOf(g);
    await redis.xgroup('CREATE', k.stream(p), GROUP, '0', 'MKSTREAM');
    for (const text of ['before-crash-1', 'before-crash-2']) {
      const e = observed(g, text);
      await redis.xadd(k.stream(p), '*', 'k', e.kind, 'e', JSON.stringify(e));
    }
    // A consumer reads them and dies before acknowledging.
    await redis.xreadgroup('GROUP', GROUP, CONSUMER, 'COUNT', 10, 'STREAMS', k.stream(p), '>');
    expect(((await redis.xpending(k.stream(p), GROUP)) as [number])[0]).toBe(2);

    await startApp('b');
    await until(async () => (await effects(p)).length === 2);
    expect(await effects(p)).toEqual(['before-crash-1', 'before-crash-2']);
    expect(recorder.seen.map((s) => s.deliveries)).toEqual([2, 2]);
    await until(async () => ((await redis.xpending(k.stream(p), GROUP)) as [number])[0] === 0);
  });

  it('keeps a group in order under a failing handler: the later events wait for the retried one', async () => {
    const app = await startApp('a');
    const log = app.get(EventLog);
    const g = '30013';
    const p = keys().partitionOf(g);
    recorder.flaky.set('flaky', 2);
    for (const text of ['first', 'flaky', 'third', 'fourth']) await log.append(observed(g, text));
    await until(async () => (await effects(p)).length === 4);
    expect(await effects(p)).toEqual(['first', 'flaky', 'third', 'fourth']);
    const order = recorder.seen.map((s) => s.text);
    expect(order).toEqual(['first', 'flaky', 'flaky', 'flaky', 'third', 'fourth']);
    expect(await redis.xlen(keys().deadLetters(p))).toBe(0);
  });

  it('dead-letters a poison event after N failed deliveries; its group waits only that long, others never', async () => {
    const app = await startApp('a');
    const log = app.get(EventLog);
    const g = '30003';
    const other = groupInSamePartition(g);
    const p = keys().partitionOf(g);
    await log.append(observed(g, 'before'));
    await log.append(observed(g, 'poison pill'));
    await log.append(observed(g, 'after-1'));
    await log.append(observed(other, 'neighbour'));
    await log.append(observed(g, 'after-2'));

    await until(async () => (await redis.xlen(keys().deadLetters(p))) === 1);
    const [[, fields]] = (await redis.xrange(keys().deadLetters(p), '-', '+')) as [[string, string[]]];
    const dead = Object.fromEntries(
      fields.reduce<[string, string][]>((pairs, v, i, all) => {
        if (i % 2 === 0) pairs.push([v, all[i + 1]!]);
        return pairs;
      }, []),
    );
    expect(dead).toMatchObject({ group: GROUP, reason: 'max_deliveries', k: EventKind.MessageObserved });
    expect(dead.error).toContain('cannot handle poison pill');
    expect((JSON.parse(dead.e!) as EventEnvelope<MessagePayload>).payload.text).toBe('poison pill');

    await until(async () => (await effects(p)).length === 4);
    expect(recorder.seen.filter((s) => s.text === 'poison pill')).toHaveLength(3);
    // The poison's own group waited in order; the neighbour of the same partition did not wait for it.
    expect((await effects(p)).filter((t) => t !== 'neighbour')).toEqual(['before', 'after-1', 'after-2']);
    const order = recorder.seen.map((s) => s.text);
    expect(order.indexOf('after-1')).toBeGreaterThan(order.lastIndexOf('poison pill'));
    expect(order.indexOf('neighbour')).toBeLessThan(order.lastIndexOf('poison pill'));
    await until(async () => ((await redis.xpending(keys().stream(p), GROUP)) as [number])[0] === 0);
  });

  it('a flood in one group does not delay a quiet group of the same partition', async () => {
    const app = await startApp('a', {}, { concurrency: 2 });
    const log = app.get(EventLog);
    const flood = '30021';
    const quiet = groupInSamePartition(flood);
    const p = keys().partitionOf(flood);
    let open!: () => void;
    recorder.gate = new Promise<void>((resolve) => (open = resolve));
    // 300 entries of one group, each blocked in its handler until the gate opens.
    await log.appendAll(Array.from({ length: 300 }, (_, i) => observed(flood, `slow ${i}`)));
    await log.append(observed(quiet, 'quiet one'));
    await log.append(observed(quiet, 'quiet two'));
    await until(async () => (await effects(p)).length === 2);
    expect(await effects(p)).toEqual(['quiet one', 'quiet two']);
    expect(recorder.seen.filter((s) => s.text.startsWith('slow'))).toHaveLength(1);
    open();
    await until(async () => (await effects(p)).length === 302, 20_000);
    const slow = (await effects(p)).filter((t) => t.startsWith('slow'));
    expect(slow).toEqual(Array.from({ length: 300 }, (_, i) => `slow ${i}`));
  }, 30_000);

  it('runs an @ queued behind its own group’s earlier event ahead of other groups’ ordinary backlog', async () => {
    const app = await startApp('a', {}, { concurrency: 1 });
    const log = app.get(EventLog);
    const busy = '30041';
    const p = keys().partitionOf(busy);
    const others: string[] = [];
    for (let g = busy; others.length < 5;) others.push((g = groupInSamePartition(g)));
    const asked = groupInSamePartition(others[others.length - 1]!);
    let open!: () => void;
    recorder.gate = new Promise<void>((resolve) => (open = resolve));
    // The one ordinary slot is taken and stays taken; five groups queue behind it.
    await log.append(observed(busy, 'slow busy'));
    await until(() => recorder.seen.length === 1);
    for (const g of others) await log.append(observed(g, `ambient ${g}`));
    // The @ comes behind an earlier message of its own group: the group's lane moves up, earlier message first.
    await log.append(observed(asked, 'asked earlier'));
    await log.append(observed(asked, 'asked direct', PRIORITY.direct));
    try {
      await until(async () => (await effects(p)).length === 2);
      expect(await effects(p)).toEqual(['asked earlier', 'asked direct']);
    } finally {
      open();
    }
    await until(async () => (await effects(p)).length === 8);
    expect((await effects(p)).slice(2)).toEqual(['slow busy', ...others.map((g) => `ambient ${g}`)]);
  }, 30_000);

  it('retries a handler that reports a dependency outage without dead-lettering it', async () => {
    const app = await startApp('a', { QUNLI_MAX_DELIVERIES: 2 });
    const g = '30004';
    const p = keys().partitionOf(g);
    await app.get(EventLog).append(observed(g, 'outage'));
    await until(() => recorder.seen.filter((s) => s.text === 'outage').length >= 4);
    expect(await redis.xlen(keys().deadLetters(p))).toBe(0);
    expect(((await redis.xpending(keys().stream(p), GROUP)) as [number])[0]).toBe(1);
  });

  it('dead-letters an entry that is not a valid envelope without calling any handler', async () => {
    await startApp('a');
    const k = keys();
    await redis.xadd(k.stream(0), '*', 'k', 'message.observed', 'e', '{"kind":"message.observed","id":5}');
    await redis.xadd(k.stream(0), '*', 'k', 'message.observed', 'e', 'not json');
    await until(async () => (await redis.xlen(k.deadLetters(0))) === 2);
    const reasons = (await redis.xrange(k.deadLetters(0), '-', '+')).map(([, f]) => f[f.indexOf('reason') + 1]);
    expect(reasons.sort()).toEqual(['bad_json', 'invalid_envelope']);
    expect(recorder.seen).toHaveLength(0);
    expect(((await redis.xpending(k.stream(0), GROUP)) as [number])[0]).toBe(0);
  });

  it('still dead-letters a corrupt entry that carries a seal: the seal must hold over the bytes read', async () => {
    const app = await startApp('a');
    const k = keys();
    const good = observed('30001', 'sealed and valid');
    await app.get(EventLog).append(good);
    await until(() => recorder.seen.some((s) => s.text === 'sealed and valid'));
    const [[, fields]] = (await redis.xrange(k.stream(k.partitionOf('30001')), '-', '+', 'COUNT', 1)) as [
      [string, string[]],
    ];
    const seal = fields[fields.indexOf('v') + 1]!;
    // The same seal over other bytes (a corrupted write, a hand-edited entry), and a seal that is not one.
    const corrupt = JSON.stringify({ ...good, id: 'not-a-uuid', payload: { text: 'corrupt' } });
    await redis.xadd(k.stream(0), '*', 'k', 'message.observed', 'e', corrupt, 'v', seal);
    await redis.xadd(k.stream(0), '*', 'k', 'message.observed', 'e', corrupt, 'v', 'forged');
    await until(async () => (await redis.xlen(k.deadLetters(0))) === 2);
    const reasons = (await redis.xrange(k.deadLetters(0), '-', '+')).map(([, f]) => f[f.indexOf('reason') + 1]);
    expect(reasons).toEqual(['invalid_envelope', 'invalid_envelope']);
    expect(recorder.seen.map((s) => s.text)).toEqual(['sealed and valid']);
  });

  it('a redelivered event changes nothing: the same event appended twice is handled once', async () => {
    const app = await startApp('a');
    const g = '30005';
    const p = keys().partitionOf(g);
    const event = observed(g, 'only-once');
    const log = app.get(EventLog);
    await log.append(event);
    await until(async () => (await effects(p)).length === 1);
    await log.append(event);
    await log.append(observed(g, 'marker'));
    await until(async () => (await effects(p)).length === 2);
    expect(await effects(p)).toEqual(['only-once', 'marker']);
    expect(await publishedDecisions(p)).toEqual(['seen only-once', 'seen marker']);
  });

  it('splits partitions between two members and hands them over when one leaves, losing nothing', async () => {
    const a = await startApp('a');
    const b = await startApp('b');
    await until(async () => {
      const owners = await Promise.all([0, 1, 2, 3].map((p) => redis.get(keys().lease(GROUP, p))));
      return owners.filter((o) => o === 'a').length === 2 && owners.filter((o) => o === 'b').length === 2;
    });
    const log = a.get(EventLog);
    const groups = ['31001', '31002', '31003', '31004', '31005', '31006', '31007', '31008'];
    for (const g of groups) await log.append(observed(g, `first ${g}`));
    await stopApp(b);
    for (const g of groups) await log.append(observed(g, `second ${g}`));
    await until(async () => {
      const all = await Promise.all([0, 1, 2, 3].map((p) => effects(p)));
      return all.flat().length === groups.length * 2;
    }, 15_000);
    const all = (await Promise.all([0, 1, 2, 3].map((p) => effects(p)))).flat();
    expect(new Set(all).size).toBe(groups.length * 2);
    const owners = await Promise.all([0, 1, 2, 3].map((p) => redis.get(keys().lease(GROUP, p))));
    expect(owners).toEqual(['a', 'a', 'a', 'a']);
  });

  it('a member restarted under the same instance id takes its partitions back without waiting for expiry', async () => {
    const first = await startApp('stable-id', { QUNLI_LEASE_MS: 60_000 });
    expect(await redis.get(keys().lease(GROUP, 0))).toBe('stable-id');
    // A crash: the process is gone, its leases (60 s) are still in Redis.
    await stopApp(first);
    for (let p = 0; p < PARTITIONS; p++) await redis.set(keys().lease(GROUP, p), 'stable-id', 'PX', 60_000);
    const g = '30007';
    await startApp('stable-id', { QUNLI_LEASE_MS: 60_000 });
    const p = keys().partitionOf(g);
    await apps[0]!.get(EventLog).append(observed(g, 'after restart'));
    await until(async () => (await effects(p)).length === 1, 5000);
    // Someone else's live lease is respected.
    await stopApp(apps[0]!);
    for (let q = 0; q < PARTITIONS; q++) await redis.set(keys().lease(GROUP, q), 'other-member', 'PX', 60_000);
    await startApp('stable-id', { QUNLI_LEASE_MS: 60_000 });
    await sleep(300);
    expect(await redis.get(keys().lease(GROUP, p))).toBe('other-member');
  });

  it('batch consumers get entries in log order and isolate a poison entry', async () => {
    const app = await startApp('a');
    const received: string[] = [];
    const handler = {
      async handleBatch(entries: BatchEntry[]): Promise<void> {
        const texts = entries
          .filter((e) => e.event.kind === EventKind.MessageObserved)
          .map((e) => (e.event.payload as MessagePayload).text);
        if (texts.includes('unprojectable')) throw new Error('cannot project');
        received.push(...texts);
      },
    };
    const g = '30006';
    const log = app.get(EventLog);
    for (const text of ['b1', 'b2', 'unprojectable', 'b3', 'b4']) await log.append(observed(g, text));
    const consumer = app.get(StreamConsumers).batch('projector', handler, { blockMs: 100 });
    await consumer.start();
    try {
      const p = keys().partitionOf(g);
      await until(async () => (await redis.xlen(keys().deadLetters(p))) === 1);
      await until(() => received.length === 4);
      expect(received).toEqual(['b1', 'b2', 'b3', 'b4']);
      const [[, fields]] = (await redis.xrange(keys().deadLetters(p), '-', '+')) as [[string, string[]]];
      expect(fields[fields.indexOf('group') + 1]).toBe('projector');
    } finally {
      await consumer.stop();
    }
  }, 20_000);
});
