import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { EventKind, Keyspace, makeEvent, type DecisionPayload, type EventEnvelope } from '@app/contracts';
import { sealEnvelope } from '@app/event-bus';
import { createRedis } from '@app/platform';
import { deleteKeys, sampleMessage } from '@app/testing';
import { COMMIT_SCRIPT, commitArguments } from '../../libs/event-bus/src/commit.script.js';
import { round } from './load.js';

/*
 * What a handled entry's commit costs the client that sends it, with the bus's commit script and arguments
 * (`commitArguments`) as the scheduler sends them for an ambient message — its `decision.made` (≈ 2 kB of JSON,
 * shaped like a real one), a group-state field, the held message and a recent-window line (Chinese text) — in two
 * forms, timed in the same run against the same Redis: `strings`, every argument a string (how the bus sent them
 * before ADR 0042), and `buffers`, what `commitArguments` sends now (the envelope's UTF-8 bytes, long arguments as
 * Buffers). CPU is the process's own (user + system) per commit; rounds alternate the forms.
 */

export interface WireOptions {
  commits: number;
  rounds: number;
  /** Commits in flight at once (the scheduler runs hundreds of turns at once under load; they share a pipeline). */
  inFlight: number;
}

type Form = 'strings' | 'buffers';

type CommittingRedis = Redis & {
  qunliWireCommit(keys: number, ...args: (string | number | Buffer)[]): Promise<number>;
};

/** The scheduler's own words for a skip (its reasons are English; the dash alone makes the JSON two-byte in V8). */
const REASON = 'skipped: 0.00 < 0.67 — nothing to answer (no question, interest or keyword)';

function decision(message: EventEnvelope): EventEnvelope {
  const at = message.createdAt;
  const steps: [string, string, string][] = [
    ['captured', 'classified', 'classified: ambient'],
    ['classified', 'linked', `linked: thread t-${message.id} (shared topic words)`],
    [
      'linked',
      'scheduled',
      'scheduled: read 2.2 s after it was sent (the scheduler is behind) — decided without waiting for more fragments',
    ],
    ['scheduled', 'skipped', REASON],
  ];
  const payload: DecisionPayload = {
    subjectEventId: message.id,
    outcome: 'skip',
    reason: REASON,
    features: Object.fromEntries(
      ['directness', 'at', 'reply', 'name', 'private', 'poke', 'interest', 'question', 'continuity', 'obligation']
        .concat(['keyword', 'silence', 'novelty', 'recentlyReplied', 'budgetSpent', 'lowInformation', 'score'])
        .map((name) => [name, 0]),
    ),
    threadId: `t-${message.id}`,
    keywordHits: [],
    transitions: steps.map(([from, to, reason], i) => ({
      seq: i + 1,
      from,
      to,
      reason,
      forced: false,
      by: 'scheduler',
      at,
    })) as DecisionPayload['transitions'],
  };
  return makeEvent({
    kind: EventKind.DecisionMade,
    groupId: message.groupId,
    source: 'scheduler',
    cause: message,
    actorIds: message.actorIds,
    evidenceMessageIds: [message.id],
    payload,
  });
}

/** One ambient message's commit, as `commitArguments` builds it, and the same arguments all as strings. */
function commit(keys: Keyspace, n: number): Record<Form, { keys: string[]; argv: (string | number | Buffer)[] }> {
  const groupId = String(300_000 + (n % 1000));
  const message = makeEvent({
    kind: EventKind.MessageObserved,
    groupId,
    source: 'bench',
    payload: sampleMessage(`第${n}条消息，大家好，今天晚上一起去吃火锅吗？`),
  });
  const stateField = JSON.stringify({
    id: message.id,
    state: 'scheduled',
    thread: `t-${message.id}`,
    text: message.payload.text,
    transitions: 3,
    at: message.createdAt,
  });
  const input = {
    stream: keys.stream(0),
    inbox: keys.inbox(0, 'scheduler'),
    group: 'scheduler',
    entryId: `${Date.now()}-${n}`,
    eventId: message.id,
    nowMs: Date.now(),
    events: [sealEnvelope(decision(message))],
    commands: [
      { command: 'HSET', keys: [keys.groupStateFields(0, groupId)], args: [`e:${message.id}`, stateField] },
      { command: 'HSET', keys: [keys.heldMessages(0)], args: [message.id, JSON.stringify(message)] },
      {
        command: 'LPUSH',
        keys: [keys.groupRecent(0, groupId)],
        args: [JSON.stringify({ eventId: message.id, text: message.payload.text })],
      },
      { command: 'LTRIM', keys: [keys.groupRecent(0, groupId)], args: [0, 19] },
    ],
  };
  const buffers = commitArguments(input);
  const strings = {
    keys: buffers.keys,
    argv: buffers.argv.map((arg) => (Buffer.isBuffer(arg) ? arg.toString('utf8') : arg)),
  };
  return { strings, buffers };
}

async function timeForm(redis: CommittingRedis, keys: Keyspace, form: Form, options: WireOptions, from: number) {
  // Arguments are built before the clock starts: only what the client does with them is timed.
  const prepared = Array.from({ length: options.commits }, (_, i) => commit(keys, from + i)[form]);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < prepared.length; i += options.inFlight) {
    await Promise.all(
      prepared
        .slice(i, i + options.inFlight)
        .map(({ keys: k, argv }) => redis.qunliWireCommit(k.length, ...k, ...argv)),
    );
  }
  const spent = process.cpuUsage(cpu);
  return {
    cpuUs: (spent.user + spent.system) / options.commits,
    wallUs: ((performance.now() - started) * 1000) / options.commits,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function wire(options: WireOptions): Promise<Record<string, unknown>> {
  const prefix = `bench-wire-${randomUUID().slice(0, 8)}`;
  const keys = new Keyspace(prefix, 1);
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'qunli-bench-wire') as CommittingRedis;
  redis.defineCommand('qunliWireCommit', { lua: COMMIT_SCRIPT });
  const samples: Record<Form, { cpuUs: number[]; wallUs: number[] }> = {
    strings: { cpuUs: [], wallUs: [] },
    buffers: { cpuUs: [], wallUs: [] },
  };
  try {
    // One unrecorded round of each warms the script cache, the JIT and the connection.
    let next = 0;
    for (const form of ['strings', 'buffers'] as const) {
      await timeForm(redis, keys, form, { ...options, commits: Math.min(options.commits, 2000) }, next);
      next += options.commits;
    }
    for (let round = 0; round < options.rounds; round++) {
      const order: Form[] = round % 2 === 0 ? ['strings', 'buffers'] : ['buffers', 'strings'];
      for (const form of order) {
        const timed = await timeForm(redis, keys, form, options, next);
        next += options.commits;
        samples[form].cpuUs.push(timed.cpuUs);
        samples[form].wallUs.push(timed.wallUs);
      }
    }
  } finally {
    await deleteKeys(redis, prefix);
    redis.disconnect();
  }
  const strings = median(samples.strings.cpuUs);
  const buffers = median(samples.buffers.cpuUs);
  return {
    scenario: 'wire',
    commits: options.commits,
    rounds: options.rounds,
    inFlight: options.inFlight,
    cpuUsPerCommit: { strings: round(strings), buffers: round(buffers) },
    wallUsPerCommit: { strings: round(median(samples.strings.wallUs)), buffers: round(median(samples.buffers.wallUs)) },
    ratio: round(buffers / strings, 3),
    samplesCpuUs: {
      strings: samples.strings.cpuUs.map((v) => round(v)),
      buffers: samples.buffers.cpuUs.map((v) => round(v)),
    },
  };
}
