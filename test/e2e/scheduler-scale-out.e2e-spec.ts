import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  ConsumerGroup,
  EventKind,
  Keyspace,
  makeEvent,
  QueueName,
  unfoldTurn,
  type EpisodeJob,
  type EventEnvelope,
  type EventKind as Kind,
  type PayloadOf,
} from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { createRedis, Metrics } from '@app/platform';
import {
  AppProcess,
  assertBuilt,
  createTestDatabase,
  deleteKeys,
  freePort,
  REPO_ROOT,
  sampleMessage,
  testRedis,
  TEST_REDIS_URL,
  uniquePrefix,
  type TestDatabase,
} from '@app/testing';

const PARTITIONS = 8;
const LEASE_MS = 2000;
const GROUPS = Array.from({ length: 24 }, (_, i) => String(60_001 + i));

/**
 * Two scheduler processes split the partitions by lease; one is killed with SIGKILL while debounce timers,
 * notBefore timers and waiting episodes are pending. The survivor takes its partitions over: no event is decided
 * twice, no timer is lost or fires twice, every episode starts once and every waiting one resumes once.
 */
describe('scheduler scale-out: two processes, one killed', () => {
  let db: TestDatabase;
  let redis: Redis;
  let bull: Redis;
  let prefix: string;
  let keys: Keyspace;
  let log: EventLog;
  let queue: Queue<EpisodeJob>;
  const schedulers = new Map<string, AppProcess>();

  async function scheduler(instance: string): Promise<AppProcess> {
    const port = await freePort();
    const app = new AppProcess(
      'scheduler',
      {
        REDIS_URL: TEST_REDIS_URL,
        DATABASE_URL: db.url,
        QUNLI_REDIS_PREFIX: prefix,
        QUNLI_PARTITIONS: String(PARTITIONS),
        QUNLI_INSTANCE_ID: instance,
        QUNLI_LEASE_MS: String(LEASE_MS),
        QUNLI_CLAIM_IDLE_MS: '4000',
        QUNLI_HTTP_HOST: '127.0.0.1',
        SCHEDULER_PORT: String(port),
        QUNLI_DEBOUNCE_DIRECT_MS: '1500',
        QUNLI_TIMER_POLL_MS: '50',
        QUNLI_DISPATCH_MAX_RUNNING: '200',
        QUNLI_DISPATCH_MAX_AMBIENT: '100',
        QUNLI_DISPATCH_GROUP_MAX_RUNNING: '10',
        QUNLI_LOG_LEVEL: 'warn',
        QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
      },
      port,
      join(tmpdir(), `qunli-e2e-${prefix}-${instance}`),
    );
    schedulers.set(instance, app);
    await app.start(60_000);
    return app;
  }

  async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) {
        const logs = [...schedulers.values()].map((s) => `--- ${s.logFile}\n${s.tail(20)}`).join('\n');
        throw new Error(`timed out waiting for ${what}\n${logs}`);
      }
      await sleep(100);
    }
  }

  async function all(): Promise<EventEnvelope[]> {
    const out: EventEnvelope[] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      for (const [, fields] of await redis.xrange(keys.stream(p), '-', '+')) {
        out.push(JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope);
      }
    }
    return out;
  }

  async function of<K extends Kind>(kind: K): Promise<EventEnvelope<PayloadOf<K>>[]> {
    // Timer and thread facts ride in the turn's move event (ADR-0024): look at them as the events they stand for.
    return (await all()).flatMap((e) => [e, ...unfoldTurn(e)]).filter((e) => e.kind === kind) as EventEnvelope<
      PayloadOf<K>
    >[];
  }

  async function owners(): Promise<(string | null)[]> {
    return Promise.all(Array.from({ length: PARTITIONS }, (_, p) => redis.get(keys.lease(ConsumerGroup.Scheduler, p))));
  }

  function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
    return counts;
  }

  beforeAll(async () => {
    assertBuilt(['scheduler']);
    db = await createTestDatabase('scaleout');
    prefix = uniquePrefix('scale');
    keys = new Keyspace(prefix, PARTITIONS);
    redis = testRedis();
    log = new EventLog(redis, keys, new Metrics('test', false));
    bull = createRedis(TEST_REDIS_URL, 'test-cognition', { enableAutoPipelining: false });
    queue = new Queue(QueueName.Episodes, { connection: bull, prefix: keys.bullPrefix });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([...schedulers.values()].map((s) => s.stop()));
    await queue?.close();
    bull?.disconnect();
    if (redis) {
      await deleteKeys(redis, prefix);
      await redis.quit();
    }
    await db?.drop();
  }, 60_000);

  it('takes over a killed scheduler’s partitions, timers and episodes without doubling or losing any', async () => {
    const a = await scheduler('sched-a');
    await scheduler('sched-b');
    await until('the partitions split between the two', async () => {
      const held = await owners();
      return (
        held.filter((o) => o === 'sched-a').length === PARTITIONS / 2 &&
        held.filter((o) => o === 'sched-b').length === PARTITIONS / 2
      );
    });

    // Ingress: an @ in every group, half of them to be handled no earlier than 3 s from now.
    const now = Date.now();
    const messages = GROUPS.map((groupId, i) =>
      makeEvent({
        kind: EventKind.MessageDirect,
        groupId,
        source: 'ingress',
        priority: 0,
        payload: sampleMessage(`问题${i}`, {
          messageId: `sm${i}`,
          sender: { userId: `u${i}`, nickname: `u${i}`, card: '', displayName: `u${i}`, role: 'member' },
          directReason: 'at',
          mentionsSelf: true,
        }),
        ...(i % 2 === 0 ? { notBefore: new Date(now + 3000) } : {}),
      }),
    );
    await log.appendAll(messages);
    // Kill A while debounce and notBefore timers of its partitions are pending.
    await until(
      'every message seen by the schedulers',
      async () => (await of(EventKind.TimerScheduled)).length >= GROUPS.length,
    );
    await a.kill('SIGKILL');

    await until('B to own every partition', async () => (await owners()).every((o) => o === 'sched-b'));
    const starts = await until('an episode start for every message', async () => {
      const found = await of(EventKind.EpisodeControl);
      const started = found.filter((c) => c.payload.command === 'start');
      return started.length >= GROUPS.length ? started : undefined;
    });
    await sleep(1500);

    const decisions = await of(EventKind.DecisionMade);
    const perSubject = countBy(decisions, (d) => d.payload.subjectEventId);
    expect(perSubject.size).toBe(GROUPS.length);
    expect([...perSubject.values()].every((n) => n === 1)).toBe(true);
    expect(countBy(await of(EventKind.EpisodeControl), (c) => `${c.payload.episodeId}:${c.payload.seq}`).size).toBe(
      (await of(EventKind.EpisodeControl)).length,
    );
    expect(new Set(starts.map((s) => s.payload.episodeId)).size).toBe(GROUPS.length);
    for (const start of starts) expect(await queue.getJob(start.payload.episodeId)).toBeDefined();

    // Cognition parks every episode for 2 s; then the other scheduler is killed while those timers are pending.
    const b2 = schedulers.get('sched-b')!;
    await scheduler('sched-a');
    await until(
      'the partitions split again',
      async () => (await owners()).filter((o) => o === 'sched-a').length === PARTITIONS / 2,
    );
    const waitUntil = new Date(Date.now() + 2000).toISOString();
    await log.appendAll(
      starts.map((s) =>
        makeEvent({
          kind: EventKind.EpisodeWaiting,
          groupId: s.groupId,
          source: 'cognition',
          payload: {
            episodeId: s.payload.episodeId,
            triggerEventId: s.payload.eventIds![0]!,
            cause: 'wait',
            step: 1,
            resumeAt: waitUntil,
            deadline: new Date(Date.now() + 120_000).toISOString(),
          },
        }),
      ),
    );
    await until('every wait timer set', async () => {
      const set = (await of(EventKind.TimerScheduled)).filter((t) => t.payload.purpose === 'episode_wait');
      return set.length === GROUPS.length;
    });
    await b2.kill('SIGKILL');

    const resumes = await until('a resume for every waiting episode', async () => {
      const found = (await of(EventKind.EpisodeControl)).filter((c) => c.payload.command === 'resume');
      return found.length >= GROUPS.length ? found : undefined;
    });
    await sleep(1500);
    expect(countBy(resumes, (r) => r.payload.episodeId).size).toBe(GROUPS.length);
    expect((await of(EventKind.EpisodeControl)).filter((c) => c.payload.command === 'resume')).toHaveLength(
      GROUPS.length,
    );
    for (const resume of resumes) {
      const job = await queue.getJob(`${resume.payload.episodeId}-r${resume.payload.seq}`);
      expect(job?.data).toMatchObject({ mode: 'resume', controlSeq: resume.payload.seq });
    }

    // No timer fired twice, none is lost: everything scheduled fired once, was cancelled, or is a future deadline.
    const fired = countBy(await of(EventKind.TimerFired), (t) => t.payload.timerId);
    expect([...fired.values()].every((n) => n === 1)).toBe(true);
    const cancelled = new Set((await of(EventKind.TimerCancelled)).map((t) => t.payload.timerId));
    const scheduled = await of(EventKind.TimerScheduled);
    for (const timer of scheduled) {
      const settled = fired.has(timer.payload.timerId) || cancelled.has(timer.payload.timerId);
      if (!settled) expect(Date.parse(timer.payload.dueAt)).toBeGreaterThan(Date.now());
    }
    expect([...fired.keys()].filter((id) => id.startsWith('not_before:'))).toHaveLength(GROUPS.length / 2);
    expect([...fired.keys()].filter((id) => id.startsWith('debounce:'))).toHaveLength(GROUPS.length);
    expect([...fired.keys()].filter((id) => id.startsWith('episode_wait:'))).toHaveLength(GROUPS.length);
  }, 240_000);
});
