import type { Redis } from 'ioredis';
import { ConsumerGroup, Keyspace, QueueName } from '@app/contracts';

/** Work the runtime still has: stream entries not yet read or not yet acknowledged, and episode jobs not done. */
export interface Backlog {
  /** Entries of the event streams a consumer group has not read yet, summed over partitions and groups (≤1000 each). */
  unread: number;
  /** Entries read but not acknowledged (`pending`). */
  pending: number;
  /** Episode jobs waiting, delayed, prioritised or running. */
  jobs: number;
  /** Where pending entries are: `group:partition` → count (only those with any). */
  pendingAt?: Record<string, number>;
}

export function backlogTotal(b: Backlog): number {
  return b.unread + b.pending + b.jobs;
}

function field(info: unknown[], name: string): unknown {
  const index = info.indexOf(name);
  return index >= 0 ? info[index + 1] : undefined;
}

/** Read the backlog of a deployment from Redis (XINFO GROUPS per partition; BullMQ's own keys). */
export async function readBacklog(redis: Redis, keys: Keyspace): Promise<Backlog> {
  const backlog: Backlog = { unread: 0, pending: 0, jobs: 0 };
  const groups = new Set<string>(Object.values(ConsumerGroup));
  for (let p = 0; p < keys.partitions; p++) {
    const stream = keys.stream(p);
    let infos: unknown[][];
    let last: string;
    try {
      infos = (await redis.call('XINFO', 'GROUPS', stream)) as unknown[][];
      last = String(field((await redis.call('XINFO', 'STREAM', stream)) as unknown[], 'last-generated-id'));
    } catch {
      continue; // no stream yet in this partition
    }
    for (const info of infos) {
      if (!groups.has(String(field(info, 'name')))) continue;
      const pending = Number(field(info, 'pending') ?? 0);
      backlog.pending += pending;
      if (pending > 0) (backlog.pendingAt ??= {})[`${String(field(info, 'name'))}:${p}`] = pending;
      // Entries after the group's last delivered id. Not XINFO's `lag`: after a restart from the append-only file
      // and trimming it stays stale (seen: a constant lag with every entry processed).
      const delivered = String(field(info, 'last-delivered-id'));
      if (delivered !== last)
        backlog.unread += ((await redis.xrange(stream, `(${delivered}`, '+', 'COUNT', 1000)) as unknown[]).length;
    }
  }
  const queue = `${keys.bullPrefix}:${QueueName.Episodes}`;
  const [wait, active, delayed, prioritized] = await Promise.all([
    redis.llen(`${queue}:wait`),
    redis.llen(`${queue}:active`),
    redis.zcard(`${queue}:delayed`),
    redis.zcard(`${queue}:prioritized`),
  ]);
  backlog.jobs = wait + active + delayed + prioritized;
  return backlog;
}
