import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  EpisodeJob,
  episodeIdFor,
  EventKind,
  Keyspace,
  makeEvent,
  PRIORITY,
  QueueName,
  type EventEnvelope,
  type MessagePayload,
} from '@app/contracts';
import { createRedis } from '@app/platform';
import {
  AppProcess,
  FakeOneBot,
  assertBuilt,
  createTestDatabase,
  deleteKeys,
  freePort,
  LlmDouble,
  REPO_ROOT,
  sampleMessage,
  testRedis,
  uniquePrefix,
  type ChatCompletionBody,
  type ScriptedAnswer,
  type TestDatabase,
} from '@app/testing';

/*
 * Cognition scales by adding processes and survives losing one: two cognition processes share the `episodes`
 * queue; the one running an episode is killed (SIGKILL) or stopped (SIGTERM) mid-episode, the other finishes it
 * from its last committed step, and outbound (against a fake OneBot implementation) sends exactly one reply.
 */

const GROUP = '30001';
const PLANNER = 'e2e-planner';
const REPLYER = 'e2e-replyer';
const SELF_ID = '10001';

const planner = (answer: ScriptedAnswer): ScriptedAnswer => ({
  ...answer,
  match: (b: ChatCompletionBody) => b.model === PLANNER,
});

describe('cognition workers: two processes, one killed mid-episode', () => {
  let db: TestDatabase;
  let redis: Redis;
  let bull: Redis;
  let prefix: string;
  let keys: Keyspace;
  let llm: LlmDouble;
  let onebot: FakeOneBot;
  let queue: Queue<EpisodeJob>;
  const workers: AppProcess[] = [];
  const names = new Map<AppProcess, string>();
  let outbound: AppProcess;
  let common: Record<string, string>;
  let logDir: string;

  async function startWorker(name: string): Promise<AppProcess> {
    const port = await freePort();
    const worker = new AppProcess(
      'cognition',
      { ...common, COGNITION_PORT: String(port), QUNLI_INSTANCE_ID: name },
      port,
      join(logDir, name),
    );
    await worker.start();
    workers.push(worker);
    names.set(worker, name);
    return worker;
  }

  async function log(): Promise<EventEnvelope[]> {
    const entries = await redis.xrange(keys.stream(keys.partitionOf(GROUP)), '-', '+');
    return entries.map(([, f]) => JSON.parse(f[f.indexOf('e') + 1]!) as EventEnvelope);
  }

  async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) {
        const tails = [...workers, outbound].map((w) => `--- ${w.logFile}\n${w.tail(20)}`).join('\n');
        throw new Error(`timed out waiting for ${what}\n${tails}`);
      }
      await sleep(100);
    }
  }

  async function trigger(text: string): Promise<EventEnvelope<MessagePayload>> {
    const payload = sampleMessage(text, {
      selfId: SELF_ID,
      mentionsSelf: true,
      directReason: 'at',
      groupName: '摸鱼研究所',
    });
    const event = makeEvent({
      kind: EventKind.MessageDirect,
      groupId: GROUP,
      payload,
      source: 'ingress',
      priority: PRIORITY.direct,
    });
    await redis.xadd(keys.stream(keys.partitionOf(GROUP)), '*', 'k', event.kind, 'e', JSON.stringify(event));
    return event;
  }

  /** Which worker holds the job now (BullMQ records the worker's name). */
  async function holder(jobId: string): Promise<AppProcess | undefined> {
    const job = await queue.getJob(jobId);
    return workers.find((w) => job?.processedBy === names.get(w));
  }

  beforeAll(async () => {
    assertBuilt(['cognition', 'outbound']);
    db = await createTestDatabase('e2e-cognition');
    prefix = uniquePrefix('e2e-cog');
    redis = testRedis();
    keys = new Keyspace(prefix, 4);
    llm = await LlmDouble.start();
    onebot = new FakeOneBot({ selfId: SELF_ID });
    await onebot.start();
    logDir = join(tmpdir(), `qunli-${prefix}`);
    common = {
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      DATABASE_URL: db.url,
      QUNLI_REDIS_PREFIX: prefix,
      QUNLI_PARTITIONS: '4',
      QUNLI_SELF_ID: SELF_ID,
      ONEBOT_HTTP_API_URL: onebot.url,
      OPENAI_BASE_URL: llm.baseUrl,
      OPENAI_API_KEY: 'e2e-key',
      QUNLI_MODEL_PLANNER: PLANNER,
      QUNLI_MODEL_REPLYER: REPLYER,
      QUNLI_HTTP_HOST: '127.0.0.1',
      QUNLI_COGNITION_CONCURRENCY: '1',
      QUNLI_EPISODE_LOCK_MS: '2000',
      QUNLI_SHUTDOWN_GRACE_MS: '300',
      QUNLI_LEASE_MS: '2000',
      QUNLI_CLAIM_IDLE_MS: '3000',
      QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
    };
    const port = await freePort();
    outbound = new AppProcess(
      'outbound',
      { ...common, OUTBOUND_PORT: String(port), QUNLI_INSTANCE_ID: 'outbound-e2e' },
      port,
      join(logDir, 'outbound'),
    );
    await Promise.all([startWorker('cog-a'), startWorker('cog-b'), outbound.start()]);
    bull = createRedis(common.REDIS_URL!, 'e2e-scheduler', { enableAutoPipelining: false });
    queue = new Queue(QueueName.Episodes, { connection: bull, prefix: keys.bullPrefix });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...workers, outbound].map((w) => w?.stop()));
    await queue?.close();
    bull?.disconnect();
    await onebot?.stop();
    await llm?.close();
    if (redis) {
      await deleteKeys(redis, prefix);
      await redis.quit();
    }
    await db?.drop();
  }, 60_000);

  async function runCase(signal: 'SIGKILL' | 'SIGTERM', text: string, reply: string): Promise<void> {
    const event = await trigger(text);
    const episodeId = episodeIdFor(event.id);
    const sendsBefore = onebot.sentMessages.length;
    const requestsBefore = llm.completionRequests.length;
    llm.push(
      planner({ kind: 'tool', calls: [{ name: 'tool_search', arguments: JSON.stringify({ query: '天气' }) }] }),
      // The second planner call is slow: the process running it dies while it waits.
      {
        ...planner({
          kind: 'tool',
          calls: [{ name: 'reply', arguments: JSON.stringify({ msg_id: event.payload.messageId }) }],
        }),
        latencyMs: 30_000,
      },
      planner({
        kind: 'tool',
        calls: [{ name: 'reply', arguments: JSON.stringify({ msg_id: event.payload.messageId }) }],
      }),
      { kind: 'content', content: reply, match: (b) => b.model === REPLYER },
    );
    const job = EpisodeJob.create({
      episodeId,
      groupId: GROUP,
      mode: 'start',
      trigger: event,
      context: [],
      deadline: new Date(Date.now() + 120_000).toISOString(),
      controlSeq: 1,
      lane: 'direct',
    });
    await queue.add('episode', job, { jobId: episodeId, attempts: 3 });
    await llm.waitForRequests(requestsBefore + 2, 60_000);
    const victim = await until('the job holder', () => holder(episodeId));
    await victim.kill(signal);

    await until(
      'the reply to be sent',
      async () => (onebot.sentMessages.length > sendsBefore ? true : undefined),
      90_000,
    );
    await until('the job to complete', async () =>
      (await queue.getJobState(episodeId)) === 'completed' ? true : undefined,
    );
    await sleep(1500);
    const mine = (await log()).filter((e) => (e.payload as { episodeId?: string }).episodeId === episodeId);
    expect(mine.filter((e) => e.kind === EventKind.ActionSend)).toHaveLength(1);
    expect(mine.filter((e) => e.kind === EventKind.EpisodeCompleted)).toHaveLength(1);
    expect(
      mine.filter((e) => e.kind === EventKind.EpisodeStep).map((e) => (e.payload as { index: number }).index),
    ).toEqual([0, 1]);
    const sent = onebot.sentMessages.slice(sendsBefore).filter((m) => m.groupId === GROUP);
    expect(sent.map((m) => m.text)).toEqual([reply]);
    // The survivor repeated only the step that was in flight, never the committed one.
    const plannerCalls = llm.completionRequests.slice(requestsBefore).filter((r) => r.body?.model === PLANNER);
    expect(plannerCalls).toHaveLength(3);
    // Bring the pool back to two workers for the next case.
    const survivors = workers.filter((w) => w !== victim);
    workers.length = 0;
    workers.push(...survivors);
    await startWorker(`cog-${signal.toLowerCase()}-${Date.now() % 1000}`);
  }

  it('SIGKILL of the worker mid-episode: the other worker completes it once, with one reply', async () => {
    await runCase('SIGKILL', '小满 今天天气怎么样', '今天晴天哦');
  }, 180_000);

  it('SIGTERM mid-episode: the worker hands the episode back after its grace period, and it completes once', async () => {
    await runCase('SIGTERM', '小满 明天呢', '明天也晴');
  }, 180_000);
});
