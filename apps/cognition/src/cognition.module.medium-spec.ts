import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { EpisodeJob, episodeIdFor, EventKind, Keyspace, makeEvent, QueueName } from '@app/contracts';
import { createRedis, Metrics, QunliConfig } from '@app/platform';
import {
  deleteKeys,
  testConfig,
  testRedis,
  TEST_REDIS_URL,
  uniquePrefix,
  createTestDatabase,
  type TestDatabase,
  LlmDouble,
  sampleMessage,
} from '@app/testing';
import { CognitionModule } from './cognition.module.js';
import { EpisodeProcessor } from './episodes/episode.processor.js';
import type { EpisodeResult } from './episodes/episode.runner.js';

const GROUP = '30001';

let redis: Redis;
let bull: Redis;
let bullEvents: Redis;
let database: TestDatabase;
let double: LlmDouble;
let prefix: string;
let keys: Keyspace;
let app: INestApplication;
let queue: Queue<EpisodeJob>;
let queueEvents: QueueEvents;

function episodeJob(text: string): EpisodeJob {
  const payload = sampleMessage(text, { mentionsSelf: true, directReason: 'at' });
  const trigger = makeEvent({ kind: EventKind.MessageDirect, groupId: GROUP, payload, source: 'ingress' });
  return EpisodeJob.create({
    episodeId: episodeIdFor(trigger.id),
    groupId: GROUP,
    trigger,
    context: [],
    deadline: new Date(Date.now() + 60_000).toISOString(),
  });
}

async function runThroughQueue(data: EpisodeJob) {
  const job = await queue.add('episode', data, { jobId: data.episodeId, attempts: 3 });
  const result = (await job.waitUntilFinished(queueEvents, 30_000)) as EpisodeResult;
  return { result, state: await queue.getJobState(data.episodeId) };
}

beforeAll(async () => {
  redis = testRedis();
  database = await createTestDatabase('cognition');
  double = await LlmDouble.start();
  prefix = uniquePrefix('cogmod');
  const config = testConfig('cognition', {
    REDIS_URL: TEST_REDIS_URL,
    DATABASE_URL: database.url,
    QUNLI_REDIS_PREFIX: prefix,
    OPENAI_BASE_URL: double.baseUrl,
    OPENAI_API_KEY: 'test-key',
    QUNLI_COGNITION_CONCURRENCY: 3,
    QUNLI_LLM_RETRY_BASE_MS: 10,
    QUNLI_PERSONA: join(import.meta.dirname, '../../../personas/default.yaml'),
  });
  keys = new Keyspace(prefix, config.QUNLI_PARTITIONS);
  const moduleRef = await Test.createTestingModule({ imports: [CognitionModule] })
    .overrideProvider(QunliConfig)
    .useValue(config)
    .compile();
  app = moduleRef.createNestApplication({ logger: ['error'] });
  await app.init();
  // What the scheduler does: enqueue with job id = episode id (BullMQ wants blocking-safe connections).
  bull = createRedis(TEST_REDIS_URL, 'test-scheduler', { enableAutoPipelining: false });
  queue = new Queue(QueueName.Episodes, { connection: bull, prefix: keys.bullPrefix });
  bullEvents = bull.duplicate();
  queueEvents = new QueueEvents(QueueName.Episodes, { connection: bullEvents, prefix: keys.bullPrefix });
  await queueEvents.waitUntilReady();
});

afterAll(async () => {
  await app?.close();
  await queueEvents?.close();
  await queue?.close();
  await double?.close();
  bull?.disconnect();
  bullEvents?.disconnect();
  await deleteKeys(redis, prefix);
  redis.disconnect();
  await database?.drop();
});

describe('cognition app', () => {
  it('works episodes from the queue with the configured concurrency', async () => {
    expect(app.get(EpisodeProcessor).worker.concurrency).toBe(3);
    const data = episodeJob('在吗');
    const { result, state } = await runThroughQueue(data);
    expect(result.outcome).toBe('replied');
    expect(state).toBe('completed');
    const kinds = (await redis.xrange(keys.stream(keys.partitionOf(GROUP)), '-', '+'))
      .map(([, f]) => f[1])
      .filter((k) => k !== EventKind.MonitorRecorded && k !== EventKind.LlmCalled && k !== EventKind.PersonaPublished);
    expect(kinds).toEqual([
      EventKind.EpisodeStarted,
      EventKind.EpisodeStep,
      EventKind.ActionSend,
      EventKind.EpisodeCompleted,
    ]);
  });

  it('retries 5xx with backoff, then completes the job as failed, so BullMQ does not retry it', async () => {
    double.failNext(3, 503);
    const { result, state } = await runThroughQueue(episodeJob('你好'));
    expect(result).toMatchObject({ outcome: 'failed', endedBy: 'llm_error', error: { code: 'LLM.HTTP_ERROR' } });
    expect(state).toBe('completed');
    expect(double.completionRequests.filter((r) => r.status === 503)).toHaveLength(3);
    const monitors = (await redis.xrange(keys.stream(keys.partitionOf(GROUP)), '-', '+'))
      .filter(([, f]) => f[1] === EventKind.MonitorRecorded)
      .map(([, f]) => (JSON.parse(f[3]!) as { payload: { name: string } }).payload.name);
    expect(monitors.filter((n) => n === 'llm.retry')).toHaveLength(2);
    expect(monitors).toContain('llm.error');
  });

  it('recovers from a rate limit, obeying Retry-After', async () => {
    double.failNext(1, 429, 0);
    const { result } = await runThroughQueue(episodeJob('在不在'));
    expect(result).toMatchObject({ outcome: 'replied' });
    expect(double.completionRequests.filter((r) => r.status === 429)).toHaveLength(1);
  });

  it("exports BullMQ's queue metrics with its own", async () => {
    const text = await app.get(Metrics).scrape();
    expect(text).toMatch(/bullmq_job_count\{queue="episodes", state="completed", app="cognition"\} 3/);
    expect(text).toMatch(/qunli_episodes_total\{outcome="replied",ended_by="action",app="cognition"\} 2/);
    expect(text).toMatch(/qunli_llm_calls_total\{role="planner",model="gpt-4o-mini",outcome="ok",app="cognition"\} 2/);
    expect(text).toMatch(/qunli_llm_calls_total\{role="replyer",model="gpt-4o-mini",outcome="ok",app="cognition"\} 2/);
    expect(text).toMatch(
      /qunli_llm_tokens_total\{role="planner",model="gpt-4o-mini",direction="in",app="cognition"\} [1-9]/,
    );
    expect(text).toMatch(/qunli_llm_retries_total\{role="planner",model="gpt-4o-mini",app="cognition"\} 3/);
    expect(text).toMatch(/qunli_episode_duration_seconds_bucket\{le="600"/);
  });
});
