import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Queue, QueueEvents } from 'bullmq';
import { EpisodeJob, episodeIdFor, EventKind, Keyspace, makeEvent, PRIORITY, QueueName } from '@app/contracts';
import { createRedis } from '@app/platform';
import {
  AppProcess,
  assertBuilt,
  createTestDatabase,
  deleteKeys,
  freePort,
  LlmDouble,
  REPO_ROOT,
  sampleMessage,
  testRedis,
  uniquePrefix,
} from '@app/testing';

export interface ScaleOptions {
  /** Latency of every LLM answer (ms). */
  latencyMs: number;
  /** Episodes each worker slot runs per measurement (at least 4: the first and last rounds are not timed). */
  rounds: number;
  /** Episodes one process runs at once. */
  concurrency: number;
  processes: number[];
}

/**
 * Episodes per second with 1, 2 and 4 cognition processes sharing the `episodes` queue, against an LLM double
 * that answers after `latencyMs` (each episode: a planner and a replyer call). The benchmark plays the scheduler:
 * it enqueues `processes × concurrency × rounds` episode jobs at once and times the steady state (the first and
 * the last round excluded; `episodesPerSecWall` is the whole run). Cognition's work is waiting on the model, so adding processes should scale almost
 * linearly (goal: 4 / 1 ≥ 3.6×).
 */
export async function scale(options: ScaleOptions): Promise<Record<string, unknown>> {
  assertBuilt(['cognition']);
  const llm = await LlmDouble.start({ latencyMs: options.latencyMs });
  const redis = testRedis();
  const db = await createTestDatabase('bench-scale');
  const episodesPerSec: Record<string, number> = {};
  const episodes: Record<string, number> = {};
  const wallPerSec: Record<string, number> = {};
  const llmCalls: Record<string, number> = {};
  try {
    for (const n of options.processes) {
      const prefix = uniquePrefix('bench-scale');
      const keys = new Keyspace(prefix, 16);
      const env: Record<string, string> = {
        REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
        DATABASE_URL: db.url,
        QUNLI_REDIS_PREFIX: prefix,
        QUNLI_SELF_ID: '10001',
        OPENAI_BASE_URL: llm.baseUrl,
        OPENAI_API_KEY: 'bench',
        QUNLI_HTTP_HOST: '127.0.0.1',
        QUNLI_LOG_LEVEL: 'warn',
        QUNLI_COGNITION_CONCURRENCY: String(options.concurrency),
        QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
      };
      const workers: AppProcess[] = [];
      for (let i = 0; i < n; i++) {
        const port = await freePort();
        workers.push(
          new AppProcess(
            'cognition',
            { ...env, COGNITION_PORT: String(port), QUNLI_INSTANCE_ID: `scale-${n}-${i}` },
            port,
            join(tmpdir(), `qunli-${prefix}`, `w${i}`),
          ),
        );
      }
      const bull = createRedis(env.REDIS_URL!, 'bench-scale', { enableAutoPipelining: false });
      const queue = new Queue<EpisodeJob>(QueueName.Episodes, { connection: bull, prefix: keys.bullPrefix });
      const bullEvents = bull.duplicate();
      const events = new QueueEvents(QueueName.Episodes, { connection: bullEvents, prefix: keys.bullPrefix });
      try {
        await Promise.all(workers.map((w) => w.start(60_000)));
        await events.waitUntilReady();
        const total = n * options.concurrency * options.rounds;
        const jobs = Array.from({ length: total }, (_, i) => {
          const groupId = String(40000 + (i % 64));
          const payload = sampleMessage(`小满 第${i}个问题`, { mentionsSelf: true, directReason: 'at' });
          const trigger = makeEvent({
            kind: EventKind.MessageDirect,
            groupId,
            payload,
            source: 'bench',
            priority: PRIORITY.direct,
          });
          return EpisodeJob.create({
            episodeId: episodeIdFor(trigger.id),
            groupId,
            mode: 'start',
            trigger,
            context: [],
            deadline: new Date(Date.now() + 600_000).toISOString(),
            controlSeq: 1,
            lane: 'direct',
          });
        });
        const completedAt: number[] = [];
        const finished = new Promise<void>((resolve) => {
          events.on('completed', () => {
            completedAt.push(performance.now());
            if (completedAt.length === total) resolve();
          });
        });
        const requestsBefore = llm.completionRequests.length;
        const began = performance.now();
        await queue.addBulk(
          jobs.map((data) => ({ name: 'episode', data, opts: { jobId: data.episodeId, attempts: 3 } })),
        );
        await finished;
        const seconds = (performance.now() - began) / 1000;
        // Steady state: from the end of the first round to the end of the second-to-last one, so start-up (the
        // workers' first jobs) and the tail (slots running out of work) do not count.
        const slots = n * options.concurrency;
        const from = completedAt[slots - 1]!;
        const to = completedAt[total - slots - 1]!;
        episodesPerSec[String(n)] = Math.round(((total - 2 * slots) / ((to - from) / 1000)) * 100) / 100;
        wallPerSec[String(n)] = Math.round((total / seconds) * 100) / 100;
        episodes[String(n)] = total;
        llmCalls[String(n)] = llm.completionRequests.length - requestsBefore;
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
        await events.close();
        await queue.close();
        bull.disconnect();
        bullEvents.disconnect();
        await deleteKeys(redis, prefix);
      }
    }
  } finally {
    await llm.close();
    await db.drop();
    redis.disconnect();
  }
  const one = episodesPerSec['1'];
  const four = episodesPerSec['4'];
  return {
    episodesPerSec,
    speedup4: one && four ? Math.round((four / one) * 100) / 100 : null,
    episodesPerSecWall: wallPerSec,
    episodes,
    llmCalls,
    llmLatencyMs: options.latencyMs,
    concurrencyPerProcess: options.concurrency,
  };
}
