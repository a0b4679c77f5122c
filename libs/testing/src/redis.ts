import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { createRedis } from '@app/platform';

export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other test run uses: `t-<random>`. */
export function uniquePrefix(label = 't'): string {
  return `${label}-${randomBytes(5).toString('hex')}`;
}

function isCluster(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}

/**
 * Delete every key under `prefix:` (SCAN, never KEYS). On a Redis Cluster every master is scanned and keys are
 * deleted one by one (a multi-key UNLINK must stay within one slot).
 */
export async function deleteKeys(redis: Redis, prefix: string): Promise<number> {
  const servers = isCluster(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
  let deleted = 0;
  for (const server of servers) {
    let cursor = '0';
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length === 0) continue;
      if (isCluster(redis)) for (const key of keys) deleted += await redis.unlink(key);
      else deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  }
  return deleted;
}

/** A connection to the tests' Redis (`REDIS_URL`: one server, or a Redis Cluster seed list). */
export function testRedis(): Redis {
  return createRedis(TEST_REDIS_URL, 'qunli-test', { maxRetriesPerRequest: 3, enableAutoPipelining: false });
}

/**
 * `redis` with one command replaced: `around` runs in its place with the original (bound to the connection) and
 * the arguments; every other property is the connection's own. For tests that count a command the code under
 * test sends, or hold back its reply.
 */
export function interceptCommand(
  redis: Redis,
  command: string,
  around: (original: (...args: unknown[]) => Promise<unknown>, args: unknown[]) => Promise<unknown>,
): Redis {
  return new Proxy(redis, {
    get(target, name, receiver) {
      if (name !== command) return Reflect.get(target, name, receiver) as unknown;
      const original = (Reflect.get(target, name, receiver) as (...a: unknown[]) => Promise<unknown>).bind(target);
      return (...args: unknown[]) => around(original, args);
    },
  });
}
