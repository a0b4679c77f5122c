/**
 * One process of the hop floor (`hop-floor.ts`): `node dist/tools/bench/hop-floor-process.js <role>`, set up by
 * `FLOOR_*` variables, telling its parent `ready` over IPC once it serves. Each role does one hop of an @'s way
 * through qunli and nothing else: no validation, decision, state, projection, ledger or prompt.
 *
 * - `edge`: takes OneBot's HTTP posts and appends each to one of 16 streams, as ingress does;
 * - `decide`: reads the streams in a consumer group, acknowledges every entry and queues a job for each @, as the
 *   scheduler does;
 * - `think`: takes the job from BullMQ, asks the LLM endpoint twice (a planner's and a replyer's call, one after the
 *   other) and queues a send job, as cognition does;
 * - `send`: takes the send job from BullMQ and posts `send_group_msg` to OneBot, as outbound does.
 *
 * An @ carries the times it passed each hop (`HopMarks`); the sender stores them in a hash for the parent to read.
 */
import { createServer } from 'node:http';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedis } from '@app/platform';

/** Epoch milliseconds (fractional) when an @ passed each hop; one machine clock for every process. */
export interface HopMarks {
  /** The edge had the whole body. */
  edge: number;
  /** The decider's stream read returned it. */
  read?: number;
  /** A thinker took its job. */
  picked?: number;
  /** The second LLM answer arrived. */
  answered?: number;
  /** A sender took the send job. */
  sendPicked?: number;
}

export const FLOOR_PARTITIONS = 16;
/** In the order they start: the decider's consumer groups exist before the edge appends anything. */
export const ROLES = ['decide', 'think', 'send', 'edge'] as const;
type Role = (typeof ROLES)[number];
const GROUP = 'floor';

export function floorKeys(prefix: string) {
  return {
    stream: (partition: number) => `${prefix}:floor:s:${partition}`,
    marks: `${prefix}:floor:marks`,
    bullPrefix: `${prefix}:floor:bull`,
  };
}

/** High-resolution epoch milliseconds, comparable across processes of one machine. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

interface EpisodeJob {
  groupId: number;
  text: string;
  marks: HopMarks;
}

interface SendJob extends EpisodeJob {
  reply: string;
}

function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`hop floor: ${name} is not set`);
  return value;
}

function mentionsSelf(event: Record<string, unknown>, selfId: string): boolean {
  const segments = event['message'];
  if (!Array.isArray(segments)) return false;
  return segments.some((s: { type?: string; data?: { qq?: string | number } }) => {
    const qq = s.data?.qq;
    return s.type === 'at' && (typeof qq === 'string' || typeof qq === 'number') && String(qq) === selfId;
  });
}

function textOf(event: Record<string, unknown>): string {
  return typeof event['raw_message'] === 'string' ? event['raw_message'] : JSON.stringify(event['message']);
}

async function edge(redis: Redis, prefix: string, selfId: string): Promise<void> {
  const keys = floorKeys(prefix);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const marks: HopMarks = { edge: epochMs() };
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(body) as Record<string, unknown>;
      } catch {
        res.writeHead(400).end();
        return;
      }
      const partition = Number(event['group_id'] ?? 0) % FLOOR_PARTITIONS;
      const urgent = mentionsSelf(event, selfId) ? '1' : '0';
      redis.xadd(keys.stream(partition), '*', 'u', urgent, 'm', JSON.stringify(marks), 'e', body).then(
        () => res.writeHead(204).end(),
        () => res.writeHead(503).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(Number(setting('FLOOR_PORT')), '127.0.0.1', resolve));
}

async function decide(redis: Redis, reader: Redis, prefix: string): Promise<void> {
  const keys = floorKeys(prefix);
  const episodes = new Queue<EpisodeJob>('episodes', { connection: redis, prefix: keys.bullPrefix });
  const streams = Array.from({ length: FLOOR_PARTITIONS }, (_, p) => keys.stream(p));
  for (const stream of streams) {
    await redis.xgroup('CREATE', stream, GROUP, '$', 'MKSTREAM').catch((error: Error) => {
      if (!error.message.includes('BUSYGROUP')) throw error;
    });
  }
  void (async () => {
    for (;;) {
      const batches = (await reader.xreadgroup(
        'GROUP',
        GROUP,
        'decider',
        'COUNT',
        100,
        'BLOCK',
        1000,
        'STREAMS',
        ...streams,
        ...streams.map(() => '>'),
      )) as [string, [string, string[]][]][] | null;
      if (!batches) continue;
      const read = epochMs();
      await Promise.all(
        batches.flatMap(([stream, entries]) =>
          entries.map(async ([id, fields]) => {
            if (fields[1] === '1') {
              const event = JSON.parse(fields[5]!) as Record<string, unknown>;
              const marks = { ...(JSON.parse(fields[3]!) as HopMarks), read };
              await episodes.add(
                'episode',
                { groupId: Number(event['group_id']), text: textOf(event), marks },
                { removeOnComplete: true, removeOnFail: true },
              );
            }
            await redis.xack(stream, GROUP, id);
          }),
        ),
      );
    }
  })().catch((error: unknown) => {
    console.error('hop floor decide:', error);
    process.exit(1);
  });
}

async function complete(llmUrl: string, content: string): Promise<string> {
  const response = await fetch(`${llmUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
    body: JSON.stringify({ model: 'bench', messages: [{ role: 'user', content }] }),
  });
  if (!response.ok) throw new Error(`LLM endpoint answered ${response.status}`);
  const body = (await response.json()) as { choices: { message: { content: string | null } }[] };
  return body.choices[0]?.message.content ?? '';
}

function think(redis: Redis, worker: Redis, prefix: string): void {
  const keys = floorKeys(prefix);
  const llmUrl = setting('FLOOR_LLM_URL');
  const sends = new Queue<SendJob>('sends', { connection: redis, prefix: keys.bullPrefix });
  new Worker<EpisodeJob>(
    'episodes',
    async (job: Job<EpisodeJob>) => {
      const marks: HopMarks = { ...job.data.marks, picked: epochMs() };
      await complete(llmUrl, job.data.text);
      const reply = await complete(llmUrl, job.data.text);
      marks.answered = epochMs();
      await sends.add('send', { ...job.data, reply, marks }, { removeOnComplete: true, removeOnFail: true });
    },
    { connection: worker, prefix: keys.bullPrefix, concurrency: 16 },
  );
}

function send(redis: Redis, worker: Redis, prefix: string): void {
  const keys = floorKeys(prefix);
  const onebotUrl = setting('FLOOR_ONEBOT_URL');
  const token = process.env.FLOOR_ONEBOT_TOKEN;
  new Worker<SendJob>(
    'sends',
    async (job: Job<SendJob>) => {
      const marks: HopMarks = { ...job.data.marks, sendPicked: epochMs() };
      const response = await fetch(`${onebotUrl}/send_group_msg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
        body: JSON.stringify({
          group_id: job.data.groupId,
          message: [{ type: 'text', data: { text: job.data.reply } }],
        }),
      });
      await response.text();
      await redis.hset(keys.marks, job.data.reply, JSON.stringify(marks));
    },
    { connection: worker, prefix: keys.bullPrefix, concurrency: 16 },
  );
}

async function main(): Promise<void> {
  const role = process.argv[2];
  const url = setting('FLOOR_REDIS_URL');
  const prefix = setting('FLOOR_PREFIX');
  const redis = createRedis(url, `floor-${role}`);
  const second = () => createRedis(url, `floor-${role}-blocking`, { enableAutoPipelining: false });
  switch (role as Role | undefined) {
    case 'edge':
      await edge(redis, prefix, setting('FLOOR_SELF_ID'));
      break;
    case 'decide':
      await decide(redis, second(), prefix);
      break;
    case 'think':
      think(redis, second(), prefix);
      break;
    case 'send':
      send(redis, second(), prefix);
      break;
    case undefined:
    default:
      throw new Error(`hop floor: unknown role ${String(role)} (one of ${ROLES.join(', ')})`);
  }
  process.send?.('ready');
}

// Run as a process; imported (by the bench's driver) for its keys and types only.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error('hop floor:', error);
    process.exit(1);
  });
}
