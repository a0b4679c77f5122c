import { Redis, type RedisOptions } from 'ioredis';

/**
 * A Redis connection for commands. Blocking reads (XREADGROUP BLOCK) and BullMQ workers take their own
 * connections via `duplicate()`.
 */
export function createRedis(url: string, name: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    connectionName: name,
    // Commands wait while the connection is re-established instead of failing after 20 retries; the apps'
    // health endpoint reports the outage meanwhile.
    maxRetriesPerRequest: null,
    enableAutoPipelining: true,
    ...extra,
  });
}
