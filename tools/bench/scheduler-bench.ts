import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  EventKind,
  Keyspace,
  makeEvent,
  PRIORITY,
  QueueName,
  type EpisodeJob,
  type EventEnvelope,
} from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { createRedis, Metrics } from '@app/platform';
import { sampleMessage } from '@app/testing';

/** Shared pieces of the scheduler benchmarks: they play ingress (append to the log) and cognition (work jobs). */

let nextMessage = 1;

/** An @ of a sender of its own, so every message is its own decision and episode. */
export function directMessage(groupId: string, createdAt = new Date()): EventEnvelope {
  const n = nextMessage++;
  return makeEvent({
    kind: EventKind.MessageDirect,
    groupId,
    source: 'bench',
    priority: PRIORITY.direct,
    createdAt,
    payload: sampleMessage(`问题${n}`, {
      messageId: `b${n}`,
      sender: { userId: `u${n}`, nickname: `u${n}`, card: '', displayName: `u${n}`, role: 'member' },
      directReason: 'at',
      mentionsSelf: true,
    }),
  });
}

export function eventLog(redis: Redis, prefix: string, partitions: number): EventLog {
  return new EventLog(redis, new Keyspace(prefix, partitions), new Metrics('bench', false));
}

/**
 * A cognition double: works `episodes` jobs, `llmMs` each, then reports the episode as completed (no reply), which
 * frees its dispatch slot. `onJob` sees each job as it is taken.
 */
export class CognitionDouble {
  private readonly connection: Redis;
  private readonly worker: Worker<EpisodeJob>;

  constructor(
    redisUrl: string,
    keys: Keyspace,
    log: EventLog,
    llmMs: number,
    concurrency: number,
    onJob: (job: Job<EpisodeJob>) => void,
  ) {
    this.connection = createRedis(redisUrl, 'bench-cognition', { enableAutoPipelining: false });
    this.worker = new Worker<EpisodeJob>(
      QueueName.Episodes,
      async (job) => {
        onJob(job);
        await sleep(llmMs);
        await log.append(
          makeEvent({
            kind: EventKind.EpisodeCompleted,
            groupId: job.data.groupId,
            source: 'bench',
            payload: {
              episodeId: job.data.episodeId,
              triggerEventId: job.data.trigger.id,
              outcome: 'no_reply',
              steps: 1,
              tokensIn: 0,
              tokensOut: 0,
              durationMs: llmMs,
            },
          }),
        );
      },
      { connection: this.connection, prefix: keys.bullPrefix, concurrency },
    );
  }

  async close(): Promise<void> {
    await this.worker.close();
    this.connection.disconnect();
  }
}

/** Resident set size of a process, from /proc (Linux). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

/** Jain's fairness index of shares: 1 when all are equal, 1/n when one takes everything. */
export function jain(shares: number[]): number {
  const sum = shares.reduce((a, b) => a + b, 0);
  const squares = shares.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (shares.length * squares);
}
