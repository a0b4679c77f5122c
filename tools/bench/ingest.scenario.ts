import { setTimeout as sleep } from 'node:timers/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { DEFAULT_PARTITIONS, EventKind, Keyspace, makeEvent } from '@app/contracts';
import { sealedFields, sealEnvelope } from '@app/event-bus';
import { createRedis } from '@app/platform';
import { REPO_ROOT, sampleMessage } from '@app/testing';
import { readIngressOutcomes, settled } from '../harness/ingress-metrics.js';
import { groupMessage, OneBotLoad, round } from './load.js';
import { caughtUp, groupBacklogs } from './backlog.js';
import { cpuBudget } from './cpu-budget.js';
import { BenchStack, cpuSpentMs, POSTGRES_COMMS, REDIS_COMMS, serverCpuMs } from './stack.js';
import { ReverseWsLoad } from './ws-load.js';

export const INGEST_TRANSPORTS = ['http', 'ws'] as const;
export type IngestTransport = (typeof INGEST_TRANSPORTS)[number];

export interface IngestOptions {
  messages: number;
  groups: number;
  /** Keep-alive HTTP connections, or reverse WebSockets (NapCat opens one per bot account). */
  connections: number;
  transport: IngestTransport;
  /** Run on a local three-master Redis Cluster the bench starts (and stops), instead of `REDIS_URL`. */
  cluster: boolean;
  /** Write a V8 CPU profile of each app into this directory (`--cpu-prof DIR`). */
  cpuProfDir?: string;
  /** Scheduler processes (they split the partitions by lease, as a scaled-out deployment does). Default 1. */
  schedulers?: number;
  /** After the last projection, how long to wait for every consumer group to catch up (ms). Default 180,000. */
  drainTimeoutMs?: number;
}

/**
 * Raw XADD throughput of this Redis from this process, pipelined, with envelopes of the size ingress writes:
 * the ceiling any event log on this Redis could reach.
 */
async function xaddCeiling(redisUrl: string, prefix: string, seconds: number): Promise<number> {
  const redis = createRedis(redisUrl, 'qunli-bench-ceiling', { enableAutoPipelining: false });
  const key = `${prefix}:xadd-ceiling`;
  const event = makeEvent({
    kind: EventKind.MessageObserved,
    groupId: '300001',
    source: 'bench',
    payload: sampleMessage('今天晚上吃什么好呢', {
      sender: { userId: '20001', nickname: 'user20001', card: '', displayName: 'user20001', role: 'member' },
    }),
  });
  // Sealed as the bus's writers store it, so the entries are the size ingress writes.
  const fields = sealedFields(sealEnvelope(event));
  let written = 0;
  const started = performance.now();
  try {
    while (performance.now() - started < seconds * 1000) {
      const pipeline = redis.pipeline();
      for (let i = 0; i < 500; i++) pipeline.xadd(key, '*', ...fields);
      await pipeline.exec();
      written += 500;
    }
    return written / ((performance.now() - started) / 1000);
  } finally {
    await redis.del(key);
    await redis.quit();
  }
}

interface LocalCluster {
  url: string;
  stop(): Promise<void>;
}

/** The same helper the `cluster` test tier uses (plain ESM in tools/lib, so Jest's global setup can load it). */
async function startCluster(): Promise<LocalCluster> {
  const helper = (await import(join(REPO_ROOT, 'tools/lib/redis-cluster.mjs'))) as {
    startRedisCluster(masters: number): Promise<LocalCluster>;
  };
  return helper.startRedisCluster(3);
}

/**
 * The log's shape when the last decision was projected, per projected message: envelopes in `event_log` by kind,
 * and the facts move events carry inside them (`payload.turn`, ADR-0024) by the kind they stand for.
 */
async function logShape(
  sql: pg.Client,
  messages: number,
): Promise<{
  envelopesPerMessage: number;
  eventsPerMessage: Record<string, number>;
  carriedPerMessage: Record<string, number>;
}> {
  const per = (n: number) => round(n / Math.max(1, messages), 3);
  const { rows: kinds } = await sql.query<{ kind: string; n: string }>(
    `SELECT kind, count(*) AS n FROM event_log GROUP BY kind ORDER BY count(*) DESC`,
  );
  const eventsPerMessage = Object.fromEntries(kinds.map((r) => [r.kind, per(Number(r.n))]));
  const { rows: carried } = await sql.query<Record<string, string | null>>(
    `SELECT sum(jsonb_array_length(COALESCE(t->'threadsIdle', '[]'))) AS "thread.idle",
            sum(jsonb_array_length(COALESCE(t->'threads', '[]'))) AS "thread.updated",
            count(t->'actor') AS "group.actor.updated",
            sum(jsonb_array_length(COALESCE(t->'timersScheduled', '[]'))) AS "timer.scheduled",
            sum(jsonb_array_length(COALESCE(t->'timersCancelled', '[]'))) AS "timer.cancelled"
       FROM (SELECT envelope->'payload'->'turn' AS t FROM event_log
              WHERE kind IN ('decision.made', 'event.transitioned') AND envelope->'payload' ? 'turn') AS c`,
  );
  const carriedPerMessage = Object.fromEntries(
    Object.entries(carried[0] ?? {}).map(([kind, n]) => [kind, per(Number(n ?? 0))]),
  );
  const envelopes = kinds.reduce((sum, r) => sum + Number(r.n), 0);
  return { envelopesPerMessage: per(envelopes), eventsPerMessage, carriedPerMessage };
}

/**
 * Signed OneBot group messages across many groups through ingress → scheduler decision → Postgres projection.
 * `msgPerSec` counts a message once its decision is projected (the whole path), over the time from the first
 * post to the last projection. Consumer groups off that path (the keyword learning) may still be behind then:
 * `groupBacklogAtProjected` says by how much; the run then waits (up to `drainTimeoutMs`) for every group to
 * catch up and reports `drainedAfterMs`, the throughput and the CPU per message including that catching up
 * (`msgPerSecDrained`, `cpuUsPerMessageDrained`), and what was still left (`groupBacklog`, all zero when every
 * group caught up). `cpuBudget` adds up the CPU a message cost every process of the machine up to its projection
 * (the load generator's included) and turns it into the rate that would keep every core busy: how fast this build
 * could go here if nothing waited.
 */
export async function ingest(options: IngestOptions): Promise<Record<string, unknown>> {
  const cluster = options.cluster ? await startCluster() : undefined;
  const redisUrl = cluster?.url ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const schedulers = options.schedulers ?? 1;
  const stack = new BenchStack(
    ['ingress', 'scheduler'],
    {},
    options.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : [],
    redisUrl,
    { scheduler: schedulers },
  );
  try {
    await stack.start();
    const ceiling = await xaddCeiling(redisUrl, stack.prefix, 3);
    const message = (i: number): Record<string, unknown> =>
      groupMessage(300_000 + (i % options.groups), 20_000 + (i % 97), `第${i}条消息，大家好`);
    const cpuBefore = stack.cpuMs();
    const postgresBefore = serverCpuMs(POSTGRES_COMMS);
    // The backends serving this run's database alone (a shared machine's other databases left out).
    const database = new URL(stack.databaseUrl).pathname.slice(1);
    const backendsBefore = serverCpuMs(POSTGRES_COMMS, ` ${database} `);
    const redisBefore = serverCpuMs(REDIS_COMMS);
    // This process generates the load (and polls for the projection): its CPU is a part of what the run costs.
    const loadBefore = process.cpuUsage();
    const started = performance.now();
    const { rejected, acceptedMs } =
      options.transport === 'http'
        ? await postAll(stack.url('ingress'), options, message)
        : await sendAllFrames(stack.url('ingress'), options, message);

    let projected = 0;
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline) {
      const { rows } = await stack.sql.query<{ n: string }>(
        `SELECT count(*) AS n FROM events WHERE outcome IS NOT NULL`,
      );
      projected = Number(rows[0]!.n);
      if (projected >= options.messages - rejected) break;
      await sleep(50);
    }
    const totalMs = performance.now() - started;
    const cpuAfter = stack.cpuMs();
    const load = process.cpuUsage(loadBefore);
    const cpuUsPerMessage: Record<string, number> = Object.fromEntries(
      Object.entries(cpuAfter).map(([app, ms]) => [app, round(((ms - (cpuBefore[app] ?? 0)) * 1000) / projected)]),
    );
    // The servers' processes, sampled while the apps are still connected (their backends still exist).
    const servers = {
      postgres: [postgresBefore, POSTGRES_COMMS, undefined],
      postgresBackends: [backendsBefore, POSTGRES_COMMS, ` ${database} `],
      redis: [redisBefore, REDIS_COMMS, undefined],
    } as const;
    for (const [server, [before, comms, cmdline]] of Object.entries(servers)) {
      const spent = cpuSpentMs(before, serverCpuMs(comms, cmdline));
      if (spent !== undefined) cpuUsPerMessage[server] = round((spent * 1000) / projected);
    }
    cpuUsPerMessage.loadGenerator = round((load.user + load.system) / projected);
    const keys = new Keyspace(stack.prefix, Number(process.env.QUNLI_PARTITIONS ?? DEFAULT_PARTITIONS));
    const groupBacklogAtProjected = await groupBacklogs(stack.redis, keys);
    const drainStarted = performance.now();
    const drainDeadline = drainStarted + (options.drainTimeoutMs ?? 180_000);
    let groupBacklog = groupBacklogAtProjected;
    while (!caughtUp(groupBacklog) && performance.now() < drainDeadline) {
      await sleep(250);
      groupBacklog = await groupBacklogs(stack.redis, keys);
    }
    const drainedAfterMs = caughtUp(groupBacklog) ? round(performance.now() - drainStarted) : null;
    // Messages per second from the first post until every consumer group had caught up.
    const msgPerSecDrained = drainedAfterMs === null ? null : round(projected / ((totalMs + drainedAfterMs) / 1000));
    const cpuDrained = stack.cpuMs();
    const cpuUsPerMessageDrained: Record<string, number> = Object.fromEntries(
      Object.entries(cpuDrained).map(([app, ms]) => [app, round(((ms - (cpuBefore[app] ?? 0)) * 1000) / projected)]),
    );
    const { rows: lag } = await stack.sql.query<{ p50: number; p99: number }>(
      `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
         FROM (SELECT extract(epoch FROM archived_at - created_at) * 1000 AS ms
                 FROM event_log WHERE kind = $1) AS l`,
      [EventKind.MessageObserved],
    );
    const msgPerSec = projected / (totalMs / 1000);
    const { envelopesPerMessage, eventsPerMessage, carriedPerMessage } = await logShape(stack.sql, projected);
    const decidedLate = await stack.counterTotal('scheduler', 'qunli_scheduler_ambient_late_total');
    return {
      scenario: 'ingest',
      transport: options.transport,
      cluster: options.cluster,
      schedulers,
      msgPerSec: round(msgPerSec),
      xaddCeilingPerSec: round(ceiling),
      ratio: round(msgPerSec / ceiling, 4),
      projectionLagP99Ms: round(Number(lag[0]!.p99)),
      projectionLagP50Ms: round(Number(lag[0]!.p50)),
      cpuUsPerMessage,
      cpuBudget: cpuBudget(cpuUsPerMessage, cpus().length),
      groupBacklogAtProjected,
      drainedAfterMs,
      msgPerSecDrained,
      cpuUsPerMessageDrained,
      groupBacklog,
      ingressAcceptPerSec: round((options.messages - rejected) / (acceptedMs / 1000)),
      messages: options.messages,
      projected,
      rejected,
      groups: options.groups,
      connections: options.connections,
      durationMs: round(totalMs),
      envelopesPerMessage,
      eventsPerMessage,
      carriedPerMessage,
      // Messages the scheduler read more than QUNLI_AMBIENT_LATE_MS after they were sent and so judged without their
      // debounce wait (ADR 0038), per message: the share of the run during which it was that far behind.
      ambientDecidedLatePerMessage: round(decidedLate / projected, 3),
    };
  } finally {
    await stack.stop();
    await cluster?.stop();
  }
}

interface Sent {
  /** Inputs ingress did not accept. */
  rejected: number;
  /** From the first input sent to the last one accepted. */
  acceptedMs: number;
}

async function postAll(
  ingressUrl: string,
  options: IngestOptions,
  message: (i: number) => Record<string, unknown>,
): Promise<Sent> {
  const load = new OneBotLoad(ingressUrl, options.connections);
  const started = performance.now();
  let next = 0;
  let rejected = 0;
  const worker = async (): Promise<void> => {
    while (next < options.messages) {
      const status = await load.post(message(next++));
      if (status !== 204) rejected++;
    }
  };
  await Promise.all(Array.from({ length: options.connections }, worker));
  const acceptedMs = performance.now() - started;
  await load.close();
  return { rejected, acceptedMs };
}

/** Frames have no answer: ingress's counters tell when it settled them all (accepted or not). */
async function sendAllFrames(
  ingressUrl: string,
  options: IngestOptions,
  message: (i: number) => Record<string, unknown>,
): Promise<Sent> {
  const before = await readIngressOutcomes(ingressUrl);
  const load = new ReverseWsLoad(ingressUrl, options.connections);
  await load.open();
  const started = performance.now();
  for (let i = 0; i < options.messages; i++) await load.send(i, message(i));
  const deadline = Date.now() + 300_000;
  for (;;) {
    const now = await readIngressOutcomes(ingressUrl);
    const accepted = now.accepted - before.accepted;
    if (settled(now) - settled(before) >= options.messages || Date.now() > deadline) {
      const acceptedMs = performance.now() - started;
      await load.close();
      return { rejected: options.messages - accepted, acceptedMs };
    }
    await sleep(20);
  }
}
