import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConsumerGroup,
  EventKind,
  Keyspace,
  makeEvent,
  QueueName,
  unfoldTurn,
  type DirectReason,
  type EpisodeControlRecord,
  type EpisodeJob,
  type EventEnvelope,
  type EventKind as Kind,
  type PayloadOf,
} from '@app/contracts';
import { connectStreamConsumer, EventLog, SEAL_FIELD, sealHolds } from '@app/event-bus';
import { createRedis, Metrics, QunliConfig } from '@app/platform';
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
import { directFeatures, forcedOnlyAttention, type AttentionPolicy } from './decisions/attention.policy.js';
import { FairDispatchStore } from './dispatch/fair-dispatch.store.js';
import { ATTENTION_POLICY } from './groups/attention.token.js';
import { schedulerConsumerOptions } from './groups/scheduler-consumer.js';
import { SchedulerModule } from './scheduler.module.js';

const PARTITIONS = 4;

/** Forced-only, except that ambient messages marked 【聊】 deliberate (as issue 7's scorer may decide). */
const testAttention: AttentionPolicy = {
  considersAmbient: false,
  judge: (input) =>
    !input.direct && input.fragments.some((f) => f.message.text.includes('【聊】'))
      ? { outcome: 'deliberate', reason: 'deliberate: attention 0.9 ≥ 0.55', features: directFeatures(input) }
      : forcedOnlyAttention.judge(input),
};

let database: TestDatabase;
let sql: pg.Client;
let redis: Redis;
let bull: Redis;
let prefix: string;
let keys: Keyspace;
let log: EventLog;
let queue: Queue<EpisodeJob>;
let app: INestApplication | undefined;
let nextMessageId = 1;

async function startScheduler(instance: string): Promise<INestApplication> {
  const config = testConfig('scheduler', {
    REDIS_URL: TEST_REDIS_URL,
    DATABASE_URL: database.url,
    QUNLI_REDIS_PREFIX: prefix,
    QUNLI_PARTITIONS: PARTITIONS,
    QUNLI_INSTANCE_ID: instance,
    QUNLI_LEASE_MS: 1500,
    QUNLI_CLAIM_IDLE_MS: 5000,
    QUNLI_DEBOUNCE_QUIET_MS: 400,
    QUNLI_DEBOUNCE_DIRECT_MS: 400,
    QUNLI_TIMER_POLL_MS: 50,
    QUNLI_DISPATCH_MAX_RUNNING: 8,
    QUNLI_DISPATCH_MAX_AMBIENT: 6,
    QUNLI_DISPATCH_GROUP_MAX_RUNNING: 2,
  });
  const moduleRef = await Test.createTestingModule({ imports: [SchedulerModule.forRoot('inline')] })
    .overrideProvider(QunliConfig)
    .useValue(config)
    .overrideProvider(ATTENTION_POLICY)
    .useValue(testAttention)
    .compile();
  const nest = moduleRef.createNestApplication({ logger: process.env.SCHEDULER_TEST_LOGS ? undefined : ['error'] });
  connectStreamConsumer(nest, ConsumerGroup.Scheduler, schedulerConsumerOptions(nest, { blockMs: 100 }));
  await nest.startAllMicroservices();
  await nest.init();
  return nest;
}

function say(
  groupId: string,
  sender: string,
  text: string,
  options: { direct?: DirectReason; notBefore?: Date; deadline?: Date; createdAt?: Date } = {},
) {
  return makeEvent({
    kind: options.direct ? EventKind.MessageDirect : EventKind.MessageObserved,
    groupId,
    source: 'ingress',
    priority: options.direct ? 0 : 5,
    actorIds: [sender],
    payload: sampleMessage(text, {
      messageId: `m${nextMessageId++}`,
      sender: { userId: sender, nickname: sender, card: '', displayName: sender, role: 'member' },
      ...(options.direct ? { directReason: options.direct, mentionsSelf: options.direct === 'at' } : {}),
    }),
    ...(options.notBefore ? { notBefore: options.notBefore } : {}),
    ...(options.deadline ? { deadline: options.deadline } : {}),
    ...(options.createdAt ? { createdAt: options.createdAt } : {}),
  });
}

/** What cognition would append about an episode. */
function cognition<K extends Kind>(kind: K, groupId: string, payload: PayloadOf<K>): EventEnvelope {
  return makeEvent({ kind, groupId, source: 'cognition', payload });
}

/** Cognition's completion of an episode with `outcome`, covering `answered`. */
function completion(
  groupId: string,
  episodeId: string,
  triggerEventId: string,
  outcome: PayloadOf<'episode.completed'>['outcome'],
  answered: string[],
): EventEnvelope {
  return cognition(EventKind.EpisodeCompleted, groupId, {
    episodeId,
    triggerEventId,
    outcome,
    steps: 1,
    tokensIn: 1,
    tokensOut: 1,
    durationMs: 1,
    answeredEventIds: answered,
  });
}

/** Cognition's completion of an episode that replied, covering `answered`. */
function repliedCompletion(
  groupId: string,
  episodeId: string,
  triggerEventId: string,
  answered: string[],
): EventEnvelope {
  return completion(groupId, episodeId, triggerEventId, 'replied', answered);
}

/** Outbound's `message.sent` for a reply's one part. */
function delivered(
  groupId: string,
  send: Omit<PayloadOf<'message.sent'>, 'segmentIndex' | 'segmentCount' | 'attempts' | 'onebotMessageId'>,
  onebotMessageId: string,
): EventEnvelope {
  return makeEvent({
    kind: EventKind.MessageSent,
    groupId,
    source: 'outbound',
    payload: { ...send, segmentIndex: 0, segmentCount: 1, attempts: 1, onebotMessageId },
  });
}

async function entries(groupId: string): Promise<EventEnvelope[]> {
  const raw = await redis.xrange(keys.stream(keys.partitionOf(groupId)), '-', '+');
  return raw
    .map(([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope)
    .filter((e) => e.groupId === groupId);
}

async function of<K extends Kind>(groupId: string, kind: K): Promise<(EventEnvelope<PayloadOf<K>> & { kind: K })[]> {
  // Timer and thread facts ride in the turn's move event (ADR-0024): look at them as the events they stand for.
  return (await entries(groupId))
    .flatMap((e) => [e, ...unfoldTurn(e)])
    .filter((e) => e.kind === kind) as (EventEnvelope<PayloadOf<K>> & { kind: K })[];
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function control(groupId: string, episodeId: string): Promise<EpisodeControlRecord | undefined> {
  const raw = await redis.get(keys.episodeControl(keys.partitionOf(groupId), episodeId));
  return raw === null ? undefined : (JSON.parse(raw) as EpisodeControlRecord);
}

/** `qunli_scheduler_turn_records_total` by outcome, as the running scheduler counts them. */
async function turnRecords(): Promise<Record<string, number>> {
  const metric = await app!.get(Metrics).registry.getSingleMetric('qunli_scheduler_turn_records_total')!.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.outcome), v.value]));
}

async function eventRow(id: string): Promise<{ state: string; reason: string | null } | undefined> {
  const { rows } = await sql.query<{ state: string; reason: string | null }>(
    'SELECT state, reason FROM events WHERE id = $1',
    [id],
  );
  return rows[0];
}

beforeAll(async () => {
  database = await createTestDatabase('scheduler');
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  redis = testRedis();
  prefix = uniquePrefix('sched');
  keys = new Keyspace(prefix, PARTITIONS);
  log = new EventLog(redis, keys, new Metrics('test', false));
  bull = createRedis(TEST_REDIS_URL, 'test-cognition', { enableAutoPipelining: false });
  queue = new Queue(QueueName.Episodes, { connection: bull, prefix: keys.bullPrefix });
  app = await startScheduler('sched-a');
}, 60_000);

afterAll(async () => {
  await app?.close();
  await queue?.close();
  bull?.disconnect();
  await sql?.end();
  await deleteKeys(redis, prefix);
  await redis.quit();
  await database?.drop();
});

describe('scheduler on real Redis and Postgres', () => {
  it('answers one sender’s fragments once: one decision, one episode job, all of them replied', async () => {
    const g = '50001';
    const first = say(g, 'alice', '在吗', { direct: 'at' });
    const second = say(g, 'alice', '问个事');
    const third = say(g, 'alice', '报销怎么弄');
    for (const e of [first, second, third]) await log.append(e);
    const [started] = await until('the start command', async () => {
      const found = await of(g, EventKind.EpisodeControl);
      return found.length > 0 ? found : undefined;
    });
    const episodeId = started!.payload.episodeId;
    const job = (await queue.getJob(episodeId))!;
    expect(job.data.trigger.id).toBe(third.id);
    expect(job.data.fragments?.map((f) => f.id)).toEqual([first.id, second.id]);
    expect(job.data.mode).toBe('start');
    expect((await queue.getJobs(['prioritized', 'waiting'])).filter((j) => j.data.groupId === g)).toHaveLength(1);
    // The dispatcher's start command is sealed like every other writer's entries: no reader validates it again.
    const startFields = (await redis.xrange(keys.stream(keys.partitionOf(g)), '-', '+'))
      .map(([, fields]) => fields)
      .find((fields) => fields[1] === EventKind.EpisodeControl && fields[3]!.includes(`"episodeId":"${episodeId}"`));
    expect(startFields?.[4]).toBe(SEAL_FIELD);
    expect(sealHolds(startFields![3]!, startFields![5])).toBe(true);

    // Cognition answers once; outbound delivers.
    const actionId = `act_${episodeId}_0`;
    const send = {
      actionId,
      episodeId,
      triggerEventId: third.id,
      targetType: 'group' as const,
      targetId: g,
      text: '这样报销',
    };
    await log.appendAll([
      cognition(EventKind.ActionSend, g, send),
      cognition(EventKind.EpisodeCompleted, g, {
        episodeId,
        triggerEventId: third.id,
        outcome: 'replied',
        steps: 1,
        tokensIn: 1,
        tokensOut: 1,
        durationMs: 1,
      }),
    ]);
    await log.append(
      makeEvent({
        kind: EventKind.MessageSent,
        groupId: g,
        source: 'outbound',
        payload: { ...send, segmentIndex: 0, segmentCount: 1, attempts: 1, onebotMessageId: '777' },
      }),
    );
    for (const e of [first, second, third]) {
      const row = await until(`${e.id} replied in Postgres`, async () => {
        const found = await eventRow(e.id);
        return found?.state === 'replied' ? found : undefined;
      });
      expect(row.reason).toBe('replied: the reply was delivered');
    }
    const decisions = await of(g, EventKind.DecisionMade);
    expect(decisions.map((d) => d.payload.subjectEventId).sort()).toEqual([first.id, second.id, third.id].sort());
    expect(new Set(decisions.map((d) => d.payload.episodeId))).toEqual(new Set([episodeId]));
    expect((await app!.get(FairDispatchStore).counts()).perGroup[g]).toBeUndefined();
  });

  it('never merges different senders, and runs their episodes in parallel in one group', async () => {
    const g = '50002';
    const a = say(g, 'alice', '我问一个', { direct: 'at' });
    const b = say(g, 'bob', '我问另一个', { direct: 'at' });
    await log.appendAll([a, b]);
    const starts = await until('two start commands', async () => {
      const found = await of(g, EventKind.EpisodeControl);
      return found.length === 2 ? found : undefined;
    });
    const jobs = await Promise.all(starts.map((s) => queue.getJob(s.payload.episodeId)));
    expect(jobs.map((j) => [j!.data.trigger.id, j!.data.fragments]).sort()).toEqual(
      [
        [a.id, []],
        [b.id, []],
      ].sort(),
    );
    expect((await app!.get(FairDispatchStore).counts()).perGroup[g]).toBe(2);
  });

  it('lets an @ preempt the group’s ambient episodes: they are superseded, their slots go to the @', async () => {
    const g = '50003';
    const chat1 = say(g, 'carol', '【聊】周末去哪玩');
    const chat2 = say(g, 'dave', '【聊】我想去爬山');
    await log.appendAll([chat1, chat2]);
    await until('both ambient episodes running', async () => (await of(g, EventKind.EpisodeControl)).length === 2);
    expect((await app!.get(FairDispatchStore).counts()).perGroup[g]).toBe(2);
    const ask = say(g, 'erin', '机器人你觉得呢', { direct: 'name' });
    await log.append(ask);
    const askEpisode = `ep_${ask.id}`;
    await until('the @ episode to start', async () => (await control(g, askEpisode))?.latest.command === 'start');
    for (const chat of [chat1, chat2]) {
      const record = await control(g, `ep_${chat.id}`);
      expect(record).toMatchObject({
        stopped: true,
        seq: 2,
        latest: { command: 'supersede', supersededBy: askEpisode },
      });
      const row = await until('the ambient event skipped', async () => {
        const found = await eventRow(chat.id);
        return found?.state === 'skipped' ? found : undefined;
      });
      expect(row.reason).toMatch(/^superseded: a message addressed to the bot/);
    }
    expect((await queue.getJob(askEpisode))!.data.lane).toBe('direct');
  });

  it('does not supersede an episode whose send is committed but not yet heard: the @ gets its own episode', async () => {
    const g = '50013';
    const chat = say(g, 'gina', '【聊】周末去哪玩');
    await log.append(chat);
    const chatEpisode = `ep_${chat.id}`;
    await until(
      'the ambient episode to start',
      async () => (await control(g, chatEpisode))?.latest.command === 'start',
    );
    // Cognition committed the episode's first send (and its acted marker); the action.send is not in the lane yet.
    await redis.set(keys.episodeActed(keys.partitionOf(g), chatEpisode), '1');
    const ask = say(g, 'gina', '机器人你觉得呢', { direct: 'name' });
    await log.append(ask);
    const askEpisode = `ep_${ask.id}`;
    await until('the @ episode to start', async () => (await control(g, askEpisode))?.latest.command === 'start');
    expect(await control(g, chatEpisode)).toMatchObject({ stopped: false, seq: 1, latest: { command: 'start' } });
    const job = (await queue.getJob(askEpisode))!.data;
    expect([job.trigger.id, ...(job.fragments ?? []).map((f) => f.id)]).toEqual([ask.id]);
  });

  it('gives an @ merged into an episode after its last look a job of its own when the replies did not cover it', async () => {
    const g = '50014';
    const ask = say(g, 'hana', '推荐本书', { direct: 'at' });
    await log.append(ask);
    const episodeId = `ep_${ask.id}`;
    await until('the episode to start', async () => (await control(g, episodeId))?.latest.command === 'start');
    const late = say(g, 'hana', '还有电影呢', { direct: 'at' });
    await log.append(late);
    await until('the interrupt', async () => (await control(g, episodeId))?.latest.command === 'interrupt');
    // The episode had looked at its control record for the last time: its reply covers the first @ only.
    const send = {
      actionId: `act_${episodeId}_0`,
      episodeId,
      triggerEventId: ask.id,
      targetType: 'group' as const,
      targetId: g,
      text: '看《三体》吧',
      answeredEventIds: [ask.id],
    };
    await log.appendAll([cognition(EventKind.ActionSend, g, send), repliedCompletion(g, episodeId, ask.id, [ask.id])]);
    const again = `ep_${late.id}-again1`;
    const job = await until('the late @ to get its own job', async () => (await queue.getJob(again)) ?? undefined);
    expect(job.data).toMatchObject({ lane: 'direct', mode: 'start', trigger: { id: late.id }, fragments: [] });
    const { answeredEventIds: _covered, ...sent } = send;
    await log.append(delivered(g, sent, '778'));
    await until('the first @ replied', async () => (await eventRow(ask.id))?.state === 'replied');
    const lateDecisions = (await of(g, EventKind.DecisionMade)).filter((d) => d.payload.subjectEventId === late.id);
    expect(lateDecisions.map((d) => d.payload.reason)).toEqual([
      `deliberate: merged into ${episodeId} — the sender went on (interrupt 1)`,
      `deliberate: @了机器人 (forced) (decided again: ${episodeId} replied without covering it)`,
    ]);
    expect((await eventRow(late.id))?.state).not.toBe('replied');
    // Its own episode answers it (and frees its slot).
    const reply = {
      ...sent,
      actionId: `act_${again}_0`,
      episodeId: again,
      triggerEventId: late.id,
      text: '《星际穿越》',
    };
    await log.appendAll([
      cognition(EventKind.ActionSend, g, { ...reply, answeredEventIds: [late.id] }),
      repliedCompletion(g, again, late.id, [late.id]),
    ]);
    await log.append(delivered(g, reply, '779'));
    await until('the late @ replied', async () => (await eventRow(late.id))?.state === 'replied');
  });

  it('parks a waiting episode, frees its slot, and resumes it with a continuation job when the timer fires', async () => {
    const g = '50004';
    const ask = say(g, 'frank', '等我一下', { direct: 'at' });
    await log.append(ask);
    const episodeId = `ep_${ask.id}`;
    await until('the start', async () => (await control(g, episodeId))?.latest.command === 'start');
    const dispatch = app!.get(FairDispatchStore);
    expect((await dispatch.counts()).perGroup[g]).toBe(1);
    await log.append(
      cognition(EventKind.EpisodeWaiting, g, {
        episodeId,
        triggerEventId: ask.id,
        cause: 'wait',
        step: 1,
        resumeAt: new Date(Date.now() + 600).toISOString(),
        deadline: new Date(Date.now() + 60_000).toISOString(),
      }),
    );
    await until('the slot to be freed', async () => (await dispatch.counts()).perGroup[g] === undefined);
    const record = await until('the resume command', async () => {
      const found = await control(g, episodeId);
      return found?.latest.command === 'resume' ? found : undefined;
    });
    expect(record).toMatchObject({ seq: 2, stopped: false, latest: { cause: 'timer' } });
    const continuation = await until(
      'the continuation job',
      async () => (await queue.getJob(`${episodeId}-r2`)) ?? undefined,
    );
    expect(continuation.data).toMatchObject({ mode: 'resume', controlSeq: 2, resume: { cause: 'timer' } });
    expect(continuation.data.trigger.id).toBe(ask.id);
    const fired = await of(g, EventKind.TimerFired);
    expect(fired.map((f) => f.payload.purpose)).toEqual(['debounce', 'episode_wait']);
    // Fired timers are sealed like every other writer's entries, so no reader runs class-validator on them.
    const raw = await redis.xrange(keys.stream(keys.partitionOf(g)), '-', '+');
    const firedFields = raw
      .map(([, fields]) => fields)
      .filter((fields) => fields[1] === EventKind.TimerFired && fields[3]!.includes(`"groupId":"${g}"`));
    expect(firedFields).toHaveLength(2);
    for (const fields of firedFields) expect(sealHolds(fields[3]!, fields[5])).toBe(true);
  });

  it('drops a debouncing message that was recalled, with that reason, and never dispatches it', async () => {
    const g = '50005';
    const ask = say(g, 'grace', '发错群了', { direct: 'at' });
    await log.append(ask);
    await log.append(
      makeEvent({
        kind: EventKind.MessageRecalled,
        groupId: g,
        source: 'ingress',
        payload: {
          messageType: 'group',
          selfId: '10001',
          messageId: ask.payload.messageId,
          userId: 'grace',
          operatorId: 'grace',
          recalledAt: 1,
        },
      }),
    );
    const row = await until('the recalled event skipped', async () => {
      const found = await eventRow(ask.id);
      return found?.state === 'skipped' ? found : undefined;
    });
    expect(row.reason).toBe('skipped: the message was recalled');
    await sleep(800);
    expect(await queue.getJob(`ep_${ask.id}`)).toBeUndefined();
    expect((await of(g, EventKind.TimerCancelled)).map((t) => t.payload.purpose)).toEqual(['debounce']);
  });

  it('a flood in one group does not hold back an @ in a quiet group of the same partition', async () => {
    const flood = '50011';
    let quiet = 50012;
    while (keys.partitionOf(String(quiet)) !== keys.partitionOf(flood)) quiet++;
    await log.appendAll(Array.from({ length: 400 }, (_, i) => say(flood, `u${i % 7}`, `刷屏${i}`)));
    const ask = say(String(quiet), 'henry', '在吗', { direct: 'at' });
    await log.append(ask);
    await until(
      'the quiet group’s decision',
      async () =>
        (await of(String(quiet), EventKind.EventTransitioned)).length > 0 ||
        (await of(String(quiet), EventKind.DecisionMade)).length > 0,
    );
    const decidedFlood = (await of(flood, EventKind.DecisionMade)).length;
    expect(decidedFlood).toBeLessThan(400);
    await until(
      'the flood to be decided',
      async () => (await of(flood, EventKind.DecisionMade)).length === 400,
      60_000,
    );
  }, 90_000);

  it('decides an @ whose debounce closes during an ambient flood of its partition ahead of the flood', async () => {
    // Ambient work of many groups fills the partition's lanes, each group with a backlog of its own; the @'s debounce
    // timer fires in the middle of it. Fired at direct priority (ADR 0037), its turn goes ahead of the ready ambient
    // lanes as the @ itself did, instead of waiting for a round of all of them (≈ 1,000 turns here).
    const g = '50031';
    const ask = say(g, 'oscar', '问个事', { direct: 'at' });
    const partition = keys.partitionOf(g);
    const floodGroups: string[] = [];
    for (let n = 51_000; floodGroups.length < 1000; n++) {
      if (keys.partitionOf(String(n)) === partition) floodGroups.push(String(n));
    }
    const flood = Array.from({ length: 3000 }, (_, i) => say(floodGroups[i % 1000]!, `u${i % 11}`, `聊天${i}`));
    await log.append(ask);
    await log.appendAll(flood);
    const fired = await until('the @’s debounce timer to fire', async () => {
      const [found] = (await entries(g)).filter((e) => e.kind === EventKind.TimerFired);
      return found;
    });
    await until('the @’s decision', async () => (await of(g, EventKind.DecisionMade)).length > 0);
    const inbox = keys.inbox(partition, ConsumerGroup.Scheduler);
    const firedAt = Date.parse(fired.createdAt);
    const decidedAt = Number(await redis.zscore(inbox, fired.id));
    const scores = await redis.zmscore(inbox, ...flood.map((e) => e.id));
    const between = scores.filter((x) => x !== null && Number(x) > firedAt && Number(x) < decidedAt).length;
    const after = scores.filter((x) => x === null || Number(x) > decidedAt).length;
    // The @'s episode ends without a reply, so its dispatch slot is free for the tests after this one, and this
    // process's projector and keyword learning catch up with the flood before the next test restarts it.
    const episodeId = `ep_${ask.id}`;
    await until('the @’s episode to start', async () => (await control(g, episodeId))?.latest.command === 'start');
    await log.append(completion(g, episodeId, ask.id, 'no_reply', []));
    await until(
      'the slot to be freed',
      async () => (await app!.get(FairDispatchStore).counts()).perGroup[g] === undefined,
    );
    await until(
      'every consumer group to catch up with the flood',
      async () => {
        const groups = (await redis.xinfo('GROUPS', keys.stream(partition))) as (string | number | null)[][];
        return groups.every((group) => {
          const field = (name: string) => group[group.indexOf(name) + 1];
          return field('pending') === 0 && field('lag') === 0;
        });
      },
      90_000,
    );
    expect(fired.priority).toBe(0);
    // Not vacuous: the timer fired while most of the flood still waited.
    expect(after).toBeGreaterThan(1500);
    // The @ waited for the turns already running and those that finished while its timer was read (40–72 on a quiet
    // machine, 128 with other test files running beside it); a round of the ready lanes is ≈ 1,000 (1,055 measured).
    expect(between).toBeLessThan(400);
  }, 150_000);

  it('holds an event until notBefore across a restart, then expires it when its deadline passes unanswered', async () => {
    const g = '50006';
    const now = Date.now();
    const later = say(g, 'ivy', '两秒后再说', {
      direct: 'at',
      notBefore: new Date(now + 1500),
      deadline: new Date(now + 4000),
    });
    await log.append(later);
    await until('the not_before timer', async () => (await of(g, EventKind.TimerScheduled)).length > 0);
    await app!.close();
    app = undefined;
    await sleep(Math.max(0, now + 2000 - Date.now()));
    app = await startScheduler('sched-a');
    const episodeId = `ep_${later.id}`;
    await until('the start after the restart', async () => (await control(g, episodeId))?.latest.command === 'start');
    const row = await until('the event expired', async () => {
      const found = await eventRow(later.id);
      return found?.state === 'expired' ? found : undefined;
    });
    expect(row.reason).toMatch(/^expired: no answer before the deadline/);
    expect(await control(g, episodeId)).toMatchObject({ stopped: true, latest: { command: 'cancel' } });
    const fired = (await of(g, EventKind.TimerFired)).map((f) => f.payload.timerId);
    expect(fired.sort()).toEqual([`deadline:${episodeId}`, `debounce:${later.id}`, `not_before:${later.id}`].sort());
  }, 60_000);

  it('publishes an @ waiting for its debounce with its decision: no event of its own, the trail whole', async () => {
    const g = '50021';
    const ask = say(g, 'kate', '在吗', { direct: 'at' });
    await log.append(ask);
    const [decision] = await until('the decision', async () => {
      const found = await of(g, EventKind.DecisionMade);
      return found.length > 0 ? found : undefined;
    });
    expect(decision!.payload.subjectEventId).toBe(ask.id);
    // The turn that only started the wait published nothing (ADR 0033): its record rides in the decision. (The
    // episode's start moves the event on later, in an event of its own.)
    const moves = (await of(g, EventKind.EventTransitioned)).flatMap((e) => e.payload.transitions);
    expect(moves.filter((t) => t.to === 'scheduled')).toEqual([]);
    const trail = decision!.payload.transitions;
    expect(trail.map((t) => t.seq)).toEqual(trail.map((_, i) => i + 1));
    expect(trail.slice(0, 3).map((t) => [t.from, t.to])).toEqual([
      ['captured', 'classified'],
      ['classified', 'linked'],
      ['linked', 'scheduled'],
    ]);
    const waited = trail[2]!;
    expect(waited.reason).toMatch(/^scheduled: debouncing/);
    expect(Date.parse(waited.at!)).toBeLessThan(Date.parse(decision!.createdAt));
    // The timer it set is dated when it was set, not when the decision carried the record.
    const [debounce] = (await of(g, EventKind.TimerScheduled)).filter((t) => t.payload.purpose === 'debounce');
    expect(debounce!.payload.setAt).toBe(waited.at);
    expect((await of(g, EventKind.ThreadUpdated)).map((t) => t.payload.subjectEventId)).toContain(ask.id);
    // Projected as if published when it happened: the whole trail, the timer set before it fired.
    const rows = await until('the trail projected', async () => {
      const { rows: found } = await sql.query<{ seq: number; to_state: string; at: Date }>(
        'SELECT seq, to_state, at FROM event_transitions WHERE event_id = $1 ORDER BY seq',
        [ask.id],
      );
      return found.length >= trail.length ? found : undefined;
    });
    expect(rows.slice(0, trail.length).map((r) => r.to_state)).toEqual(trail.map((t) => t.to));
    expect(rows[2]!.at.toISOString()).toBe(waited.at);
    const timer = await until('the timer projected', async () => {
      const { rows: found } = await sql.query<{ set_at: Date; fired_at: Date | null }>(
        'SELECT set_at, fired_at FROM timers WHERE timer_id = $1',
        [`debounce:${ask.id}`],
      );
      return found[0]?.fired_at ? found[0] : undefined;
    });
    expect(timer.set_at.toISOString()).toBe(waited.at);
    expect(timer.set_at.getTime()).toBeLessThan(timer.fired_at!.getTime());
    expect(await redis.hget(keys.groupStateFields(keys.partitionOf(g), g), 'unpublished')).toBeNull();
  }, 30_000);

  it('publishes a waiting record of another sender before the turn that decides first, each trail whole', async () => {
    const g = '50022';
    const counted = await turnRecords();
    const first = say(g, 'liam', '在吗', { direct: 'at' });
    await log.append(first);
    await sleep(120);
    const second = say(g, 'mona', '我也有事', { direct: 'at' });
    await log.append(second);
    await until('both decisions', async () => (await of(g, EventKind.DecisionMade)).length === 2 || undefined);
    const log2 = await entries(g);
    const at = (kind: string, subject: string) =>
      log2.findIndex((e) => e.kind === kind && (e.payload as { subjectEventId?: string }).subjectEventId === subject);
    // The first decision's turn published mona's waiting record on its own, just before it.
    expect(at(EventKind.EventTransitioned, first.id)).toBe(-1);
    expect(at(EventKind.EventTransitioned, second.id)).toBeGreaterThan(-1);
    expect(at(EventKind.EventTransitioned, second.id)).toBeLessThan(at(EventKind.DecisionMade, first.id));
    expect(at(EventKind.DecisionMade, first.id)).toBeLessThan(at(EventKind.DecisionMade, second.id));
    const record = log2[at(EventKind.EventTransitioned, second.id)]!;
    expect(record).toMatchObject({ causationId: second.id, actorIds: ['mona'], evidenceMessageIds: [second.id] });
    expect(Date.parse(record.createdAt)).toBeLessThan(
      Date.parse(log2[at(EventKind.DecisionMade, first.id)]!.createdAt),
    );
    for (const subject of [first.id, second.id]) {
      const seqs = log2
        .filter((e) => e.kind === EventKind.DecisionMade || e.kind === EventKind.EventTransitioned)
        .filter((e) => (e.payload as { subjectEventId: string }).subjectEventId === subject)
        .flatMap((e) => (e.payload as { transitions: { seq: number }[] }).transitions.map((t) => t.seq));
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }
    // Counted once each, as committed: both waits deferred; liam's rode in his decision, mona's went on its own.
    const now = await turnRecords();
    const delta = (outcome: string) => (now[outcome] ?? 0) - (counted[outcome] ?? 0);
    expect({ deferred: delta('deferred'), merged: delta('merged'), published: delta('published') }).toEqual({
      deferred: 2,
      merged: 1,
      published: 1,
    });
  }, 30_000);

  it('publishes at once the wait of a message read long after it was appended (its partition is behind)', async () => {
    const g = '50023';
    const late = say(g, 'nina', '在吗', { direct: 'at', createdAt: new Date(Date.now() - 3000) });
    await log.append(late);
    await until('the decision', async () => (await of(g, EventKind.DecisionMade)).length > 0 || undefined);
    const [waited] = await of(g, EventKind.EventTransitioned);
    expect(waited!.payload.transitions.map((t) => t.to)).toEqual(['classified', 'linked', 'scheduled']);
    expect((await of(g, EventKind.DecisionMade))[0]!.payload.transitions[0]!.seq).toBe(4);
  }, 30_000);

  it('gives every decision a reason', async () => {
    await until('the projector to catch up', async () => {
      const { rows } = await sql.query<{ n: string }>(
        `SELECT count(*) AS n FROM events WHERE group_id = '50011' AND state = 'skipped'`,
      );
      return Number(rows[0]!.n) === 400;
    });
    const { rows } = await sql.query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE state IN ('replied', 'skipped', 'expired', 'eligible', 'deliberating', 'snoozed') AND (reason IS NULL OR reason = '')`,
    );
    expect(Number(rows[0]!.n)).toBe(0);
    const { rows: transitions } = await sql.query<{ n: string }>(
      `SELECT count(*) AS n FROM event_transitions WHERE actor IS NULL OR reason IS NULL`,
    );
    expect(Number(transitions[0]!.n)).toBe(0);
  }, 60_000);
});
