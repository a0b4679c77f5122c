import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedis } from './redis.js';

/**
 * `REDIS_URL=unix:///path/redis.sock`: a redis-server of this spec's own that listens on a Unix socket only (no TCP
 * port) and wants a password. The apps' connections — commands, `duplicate()` for blocking reads, BullMQ's — all
 * reach it, in the database the URL names.
 */
describe('Redis over a Unix socket', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qunli-redis-socket-'));
  const socket = join(dir, 'redis.sock');
  const url = `unix://:s%40cret@${socket}?db=3`;
  let server: ChildProcess;
  const opened: Redis[] = [];
  /** BullMQ queues and workers a test opened, closed after it. */
  const closers: (() => Promise<void>)[] = [];
  const open = (name: string, extra = {}) => {
    const redis = createRedis(url, name, extra);
    opened.push(redis);
    return redis;
  };

  beforeAll(async () => {
    server = spawn(
      'redis-server',
      ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--requirepass', 's@cret'],
      { cwd: dir, stdio: 'ignore' },
    );
    server.once('error', () => undefined);
    const deadline = Date.now() + 10_000;
    while (!existsSync(socket)) {
      if (Date.now() > deadline || server.exitCode !== null) throw new Error('redis-server did not open its socket');
      await sleep(20);
    }
  });

  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
  });

  afterAll(async () => {
    await Promise.all(opened.map((redis) => redis.quit().catch(() => redis.disconnect())));
    if (server.exitCode === null) {
      server.kill('SIGKILL');
      await once(server, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects by the path, with the password and in the database of the URL', async () => {
    const redis = open('qunli-socket-spec');
    expect(await redis.ping()).toBe('PONG');
    await redis.set('k', 'v');
    const info = await redis.client('INFO');
    expect(info).toMatch(/\bdb=3\b/);
    expect(info).toMatch(/\bname=qunli-socket-spec\b/);
    expect(info).toContain(`laddr=${socket}`);
    // The key went to database 3, not 0.
    await redis.select(0);
    expect(await redis.exists('k')).toBe(0);
  });

  it('gives a blocking read on a duplicate the same socket and database', async () => {
    const redis = open('qunli-socket-spec-writer');
    const reader = redis.duplicate();
    opened.push(reader);
    await redis.xgroup('CREATE', 's', 'g', '$', 'MKSTREAM');
    const read = reader.xreadgroup('GROUP', 'g', 'c', 'COUNT', 1, 'BLOCK', 5000, 'STREAMS', 's', '>');
    await sleep(50);
    await redis.xadd('s', '*', 'f', 'entry');
    const streams = (await read) as [string, [string, string[]][]][];
    expect(streams[0]![1][0]![1]).toEqual(['f', 'entry']);
    expect(reader.options.path).toBe(socket);
    expect(reader.options.db).toBe(3);
  });

  it('carries BullMQ jobs from a queue to a worker', async () => {
    const connection = open('qunli-socket-spec-bullmq', { enableAutoPipelining: false });
    const queue = new Queue('episodes', { connection, prefix: 'socket-spec' });
    let seen: unknown;
    const done = new Promise<void>((resolve) => {
      const worker = new Worker(
        'episodes',
        async (job) => {
          seen = job.data;
          resolve();
        },
        { connection, prefix: 'socket-spec' },
      );
      closers.push(() => worker.close());
    });
    closers.push(() => queue.close());
    await queue.add('episode', { groupId: 42 });
    await done;
    expect(seen).toEqual({ groupId: 42 });
  });
});
