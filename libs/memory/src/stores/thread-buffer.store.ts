import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { REDIS } from '@app/platform';
import type { ThreadLine } from '../rules/memory-extraction.prompt.js';
import type { GroupThread } from '../rules/thread.rules.js';

export interface ThreadState {
  /** Messages seen in the thread so far. */
  ordinal: number;
  /** Messages summarised so far. */
  summarized: number;
  /** Product ms of the newest message. */
  lastAt: number;
}

/** A staged command (`StreamContext.stage`-shaped), so the consumer's writes commit with its ack. */
export interface StagedWrite {
  command: string;
  keys: string[];
  args: (string | number)[];
}

// Moves `summarized` forward (never back) and drops the lines it covers. KEYS: state, lines. ARGV: through.
const MARK = `
local done = tonumber(redis.call('HGET', KEYS[1], 'summarized') or '0')
local through = tonumber(ARGV[1])
if through > done then redis.call('HSET', KEYS[1], 'summarized', through) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', through)
return through
`;

/**
 * Memory's per-thread buffers in Redis: the thread's counters and its messages not yet summarised (a sorted set
 * scored by ordinal, so a redelivered message is one member). Keys carry the group's partition tag; the consumer
 * writes them in its commit, the summary job clears what it summarised in the commit of its events.
 */
@Injectable()
export class ThreadBufferStore {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  async groupThread(groupId: string): Promise<GroupThread | null> {
    const raw = await this.redis.hgetall(this.keys.memoryGroupThread(this.keys.partitionOf(groupId), groupId));
    return raw.threadId ? { threadId: raw.threadId, lastAt: Number(raw.lastAt ?? 0) } : null;
  }

  async state(groupId: string, threadId: string): Promise<ThreadState> {
    const p = this.keys.partitionOf(groupId);
    const raw = await this.redis.hgetall(this.keys.memoryThreadState(p, groupId, threadId));
    return {
      ordinal: Number(raw.ordinal ?? 0),
      summarized: Number(raw.summarized ?? 0),
      lastAt: Number(raw.lastAt ?? 0),
    };
  }

  /** Lines with ordinal in (after, through], oldest first. */
  async lines(groupId: string, threadId: string, after: number, through: number): Promise<ThreadLine[]> {
    const p = this.keys.partitionOf(groupId);
    const members = await this.redis.zrangebyscore(
      this.keys.memoryThreadLines(p, groupId, threadId),
      `(${after}`,
      String(through),
    );
    return members.map((m) => JSON.parse(m) as ThreadLine);
  }

  /** The writes that record one message: appended to the handler's commit. `ttlMs` is real time. */
  recordMessage(
    groupId: string,
    threadId: string,
    line: ThreadLine,
    explicitThread: boolean,
    ttlMs: number,
  ): StagedWrite[] {
    const p = this.keys.partitionOf(groupId);
    const state = this.keys.memoryThreadState(p, groupId, threadId);
    const lines = this.keys.memoryThreadLines(p, groupId, threadId);
    const writes: StagedWrite[] = [
      { command: 'ZADD', keys: [lines], args: [line.ordinal, JSON.stringify(line)] },
      { command: 'HSET', keys: [state], args: ['ordinal', line.ordinal, 'lastAt', line.sentAt] },
      { command: 'PEXPIRE', keys: [lines], args: [ttlMs] },
      { command: 'PEXPIRE', keys: [state], args: [ttlMs] },
    ];
    if (!explicitThread) {
      const group = this.keys.memoryGroupThread(p, groupId);
      writes.push({ command: 'HSET', keys: [group], args: ['threadId', threadId, 'lastAt', line.sentAt] });
      writes.push({ command: 'PEXPIRE', keys: [group], args: [ttlMs] });
    }
    return writes;
  }

  /** A MULTI on this store's connection (for a mark with no events to go with it). */
  multi(): ReturnType<Redis['multi']> {
    return this.redis.multi();
  }

  /** Adds "summarised through `through`" to a commit (the MULTI that appends the summary's events). */
  markSummarized(tx: ReturnType<Redis['multi']>, groupId: string, threadId: string, through: number): void {
    const p = this.keys.partitionOf(groupId);
    tx.eval(
      MARK,
      2,
      this.keys.memoryThreadState(p, groupId, threadId),
      this.keys.memoryThreadLines(p, groupId, threadId),
      through,
    );
  }
}
