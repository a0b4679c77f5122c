import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConsumerGroup, EventKind, Keyspace, makeEvent, type EventEnvelope, type EventOf } from '@app/contracts';
import { connectStreamConsumer, EventLog } from '@app/event-bus';
import { Clock, Metrics, QunliConfig } from '@app/platform';
import {
  createTestDatabase,
  deleteKeys,
  sampleMessage,
  testConfig,
  testRedis,
  TEST_REDIS_URL,
  uniquePrefix,
  type TestDatabase,
} from '@app/testing';
import { schedulerConsumerOptions } from '../groups/scheduler-consumer.js';
import { SchedulerModule } from '../scheduler.module.js';

/*
 * The scheduler as it runs (real Redis, Postgres, durable timers on a scaled clock) with the attention it ships:
 * an open question in the persona's interests waits, nobody answers, and it goes to an episode; chatter is
 * recorded and skipped; the thread and its open question are projected; every decision names its thread.
 */

const PARTITIONS = 2;
const GROUP = '60001';
let database: TestDatabase;
let sql: pg.Client;
let redis: Redis;
let prefix: string;
let keys: Keyspace;
let log: EventLog;
let app: INestApplication | undefined;
let n = 1;

/** A message as ingress appends it: stamped by the scaled clock (`sentAgoMs` product ms earlier), in `groupId`. */
function say(sender: string, text: string, options: { groupId?: string; sentAgoMs?: number } = {}): EventEnvelope {
  return makeEvent({
    kind: EventKind.MessageObserved,
    groupId: options.groupId ?? GROUP,
    createdAt: new Date(app!.get(Clock).nowMs() - (options.sentAgoMs ?? 0)),
    source: 'ingress',
    priority: 5,
    actorIds: [sender],
    payload: sampleMessage(text, {
      messageId: `am${n++}`,
      sender: { userId: sender, nickname: sender, card: '', displayName: sender, role: 'member' },
    }),
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function groupEvents(groupId: string): Promise<EventEnvelope[]> {
  const raw = await redis.xrange(keys.stream(keys.partitionOf(groupId)), '-', '+');
  return raw
    .map(([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope)
    .filter((e) => e.groupId === groupId);
}

async function decisions(groupId = GROUP): Promise<EventOf<'decision.made'>[]> {
  return (await groupEvents(groupId)).filter((e): e is EventOf<'decision.made'> => e.kind === EventKind.DecisionMade);
}

/**
 * Every recorded move of one event, in order. A move usually rides on the event's decision, but one that waited
 * unpublished (ADR 0033) goes out in an `event.transitioned` of its own as soon as a later turn of the group has
 * something to publish, so both kinds are read.
 */
async function transitionsOf(groupId: string, subjectEventId: string): Promise<{ to: string; reason: string }[]> {
  return (await groupEvents(groupId))
    .filter(
      (e): e is EventOf<'decision.made'> | EventOf<'event.transitioned'> =>
        (e.kind === EventKind.DecisionMade || e.kind === EventKind.EventTransitioned) &&
        (e.payload as { subjectEventId?: string }).subjectEventId === subjectEventId,
    )
    .flatMap((e) => e.payload.transitions);
}

beforeAll(async () => {
  database = await createTestDatabase('attention');
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  redis = testRedis();
  prefix = uniquePrefix('attn');
  keys = new Keyspace(prefix, PARTITIONS);
  log = new EventLog(redis, keys, new Metrics('test', false));
  const config = testConfig('scheduler', {
    REDIS_URL: TEST_REDIS_URL,
    DATABASE_URL: database.url,
    QUNLI_REDIS_PREFIX: prefix,
    QUNLI_PARTITIONS: PARTITIONS,
    QUNLI_INSTANCE_ID: 'attention-a',
    QUNLI_LEASE_MS: 1500,
    QUNLI_CLAIM_IDLE_MS: 5000,
    // Product time runs 20× faster: the persona's 42 s snooze is about 2 s here.
    QUNLI_TIME_SCALE: 20,
    QUNLI_TIME_EPOCH: new Date().toISOString(),
    QUNLI_DEBOUNCE_QUIET_MS: 2000,
    QUNLI_TIMER_POLL_MS: 50,
  });
  const moduleRef = await Test.createTestingModule({ imports: [SchedulerModule.forRoot('inline')] })
    .overrideProvider(QunliConfig)
    .useValue(config)
    .compile();
  app = moduleRef.createNestApplication({ logger: ['error'] });
  connectStreamConsumer(app, ConsumerGroup.Scheduler, schedulerConsumerOptions(app, { blockMs: 100 }));
  await app.startAllMicroservices();
  await app.init();
}, 60_000);

afterAll(async () => {
  await app?.close();
  await sql?.end();
  await deleteKeys(redis, prefix);
  await redis.quit();
  await database?.drop();
});

describe('attention in the running scheduler', () => {
  it('waits on an open question in its interests, takes it up when nobody answers, and skips chatter', async () => {
    const question = say('alice', '有人知道猫咪吐毛球怎么办吗？');
    const chatter = say('bob', '哈哈哈哈');
    await log.append(question);
    await log.append(chatter);

    const reasons = await until('the question to go to an episode', async () => {
      const mine = (await decisions()).filter((d) => d.payload.subjectEventId === question.id);
      return mine.some((d) => d.payload.outcome === 'deliberate') ? mine.map((d) => d.payload.reason) : undefined;
    });
    expect(reasons[0]).toMatch(/^snoozed: .*about 猫/);
    expect(reasons[reasons.length - 1]).toMatch(/^deliberate: 0\.\d\d ≥ 0\.67 \(nobody answered in \d+ s/);

    const skipped = await until('the chatter to be skipped', async () =>
      (await decisions()).find((d) => d.payload.subjectEventId === chatter.id),
    );
    expect(skipped.payload.reason).toMatch(/^skipped: chatter/);

    const all = await decisions();
    const threadId = `t-${question.id}`;
    expect(all.every((d) => d.payload.threadId === threadId && Array.isArray(d.payload.keywordHits))).toBe(true);

    const thread = await until('the thread projected', async () => {
      const { rows } = await sql.query<{
        participants: string[];
        open_questions: { senderId: string }[];
        status: string;
      }>('SELECT participants, open_questions, status FROM threads WHERE thread_id = $1', [threadId]);
      return rows[0]?.participants.length === 2 ? rows[0] : undefined;
    });
    expect(thread).toMatchObject({ participants: ['alice', 'bob'], status: 'live' });
    expect(thread.open_questions.map((q) => q.senderId)).toEqual(['alice']);
    const actor = await until('the group actor projected', async () => {
      const { rows } = await sql.query<{ replies_in_window: number; reason: string }>(
        'SELECT replies_in_window, reason FROM group_actors WHERE group_id = $1',
        [GROUP],
      );
      return rows[0];
    });
    expect(actor.replies_in_window).toBe(1);
    expect(actor.reason).toMatch(/^ambient episode .* takes a share of the reply budget$/);
  }, 60_000);

  it('judges at once an ambient message read long after it was sent; a fresh one waits out its debounce', async () => {
    const groupId = '60002';
    const lateDecided = async () =>
      (await app!.get(Metrics).registry.getSingleMetric('qunli_scheduler_ambient_late_total')!.get()).values[0]
        ?.value ?? 0;
    const counted = await lateDecided();
    // 200 s of product time behind is 10 real seconds at this scale: past QUNLI_AMBIENT_LATE_MS (2 s).
    const stale = say('carol', '有人知道猫咪吐毛球怎么办吗？', { groupId, sentAgoMs: 200_000 });
    const fresh = say('dave', '有人知道猫咪吐毛球怎么办吗？', { groupId });
    await log.append(stale);
    await log.append(fresh);
    const first = await until('both judged', async () => {
      const all = await decisions(groupId);
      const of = (id: string) => all.find((d) => d.payload.subjectEventId === id);
      const [a, b] = [of(stale.id), of(fresh.id)];
      return a && b ? { stale: a, fresh: b } : undefined;
    });
    const scheduled = async (subject: EventEnvelope) =>
      (await transitionsOf(groupId, subject.id)).find((t) => t.to === 'scheduled')?.reason;
    expect(await scheduled(stale)).toMatch(/^scheduled: read 10\.\d s after it was sent \(the scheduler is behind\)/);
    expect(await scheduled(fresh)).toMatch(/^scheduled: debouncing — waiting until /);
    // Judged by attention like any other message, only without the wait.
    expect(first.stale.payload.reason).toMatch(/^snoozed: .*about 猫/);
    expect((await lateDecided()) - counted).toBe(1);
  }, 60_000);

  it("takes a group's new keyword set version in the group's order, and leaves a global set's to the timers", async () => {
    // The decider's side (snoozed batches judged with an older version are judged again) is keyword-wake.spec.ts.
    const entries = async (outcome: string) =>
      (await app!.get(Metrics).registry.getSingleMetric('qunli_stream_entries_total')!.get()).values.find(
        (v) =>
          v.labels.group === ConsumerGroup.Scheduler &&
          v.labels.kind === EventKind.KeywordLexiconVersioned &&
          v.labels.outcome === outcome,
      )?.value ?? 0;
    const versioned = (groupId: string | null, scope: 'group' | 'global', ownerId: string) =>
      makeEvent({
        kind: EventKind.KeywordLexiconVersioned,
        groupId,
        source: 'scheduler',
        payload: { scope, ownerId, version: 2, terms: 1, changedTermIds: ['t1'] },
      });
    const [handled, skipped] = [await entries('handled'), await entries('skipped')];
    await log.append(versioned('60003', 'group', '60003'));
    await log.append(versioned(null, 'global', 'global'));
    await until('both read', async () => (await entries('handled')) - handled === 2, 10_000);
    expect((await entries('skipped')) - skipped).toBe(0);
    // Nothing was snoozed in either: no decision, and no state for the global partition's null group.
    expect(await decisions('60003')).toEqual([]);
  }, 30_000);
});
