import type { Redis } from 'ioredis';
import type { Keyspace } from '@app/contracts';

/** One consumer group's backlog over every partition: entries it has not read yet, and read but not acknowledged. */
export interface GroupBacklog {
  unread: number;
  pending: number;
}

function infoField(info: unknown[], name: string): unknown {
  const index = info.indexOf(name);
  return index >= 0 ? info[index + 1] : undefined;
}

/**
 * Every consumer group's backlog on the event streams, summed over partitions (`XINFO GROUPS`). `unread` is the
 * group's `lag` (Redis 7; the bench's streams are fresh and never trimmed, so it is exact), or, where Redis cannot
 * tell it, the entries after the group's last delivered id, counted up to 10,000 per partition.
 */
export async function groupBacklogs(redis: Redis, keys: Keyspace): Promise<Record<string, GroupBacklog>> {
  const out: Record<string, GroupBacklog> = {};
  for (let p = 0; p < keys.partitions; p++) {
    const stream = keys.stream(p);
    let infos: unknown[][];
    try {
      infos = (await redis.call('XINFO', 'GROUPS', stream)) as unknown[][];
    } catch {
      continue; // No stream in this partition.
    }
    for (const info of infos) {
      const name = String(infoField(info, 'name'));
      const lag = infoField(info, 'lag');
      const unread =
        typeof lag === 'number'
          ? lag
          : (await redis.xrange(stream, `(${String(infoField(info, 'last-delivered-id'))}`, '+', 'COUNT', 10_000))
              .length;
      const group = (out[name] ??= { unread: 0, pending: 0 });
      group.unread += unread;
      group.pending += Number(infoField(info, 'pending') ?? 0);
    }
  }
  return out;
}

export const caughtUp = (backlogs: Record<string, GroupBacklog>): boolean =>
  Object.values(backlogs).every((b) => b.unread === 0 && b.pending === 0);
