import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** Where Redis is: one server (by URL or Unix socket), or a Redis Cluster by seed nodes (any few of its masters). */
export type RedisTarget =
  | { cluster: false; url: string }
  | { cluster: false; socket: { path: string; db?: number; username?: string; password?: string } }
  | { cluster: true; nodes: { host: string; port: number }[]; tls: boolean; username?: string; password?: string };

const CLUSTER_SCHEMES = /^(rediss?)\+cluster:\/\//i;
const UNIX_SCHEME = /^unix:\/\//i;

/**
 * `REDIS_URL` names one server (`redis://host:6379/0`, `rediss://…`) or a Redis Cluster by seed nodes, in either
 * form: `redis+cluster://[user:password@]host1:7001,host2:7002` (`rediss+cluster://` for TLS), or a comma list of
 * plain URLs `redis://host1:7001,redis://host2:7002` (credentials from the first). See docs/redis-cluster.md.
 * A server on the same machine may be named by its Unix socket, `unix:///run/redis/redis.sock` (`?db=N`,
 * `unix://:password@/path`), which also reaches a Redis with no TCP port. A round trip then skips the TCP stack on
 * both ends; a whole deployment measured no faster for it (ADR 0048).
 */
export function redisTarget(url: string): RedisTarget {
  if (UNIX_SCHEME.test(url)) return { cluster: false, socket: unixSocket(url) };
  const scheme = CLUSTER_SCHEMES.exec(url);
  if (!scheme && !url.includes(',')) return { cluster: false, url: checkedUrl(url) };
  const tls = scheme ? scheme[1]!.toLowerCase() === 'rediss' : url.startsWith('rediss://');
  const seeds = scheme
    ? url.slice(scheme[0].length).split(',')
    : url.split(',').map((part) => part.trim().replace(/^rediss?:\/\//i, ''));
  let username: string | undefined;
  let password: string | undefined;
  const nodes = seeds.map((seed, i) => {
    const parsed = new URL(`redis://${seed.trim()}`);
    if (i === 0 && parsed.password !== '') {
      password = decoded(parsed.password);
      if (parsed.username !== '') username = decoded(parsed.username);
    }
    return { host: parsed.hostname, port: parsed.port === '' ? 6379 : Number(parsed.port) };
  });
  return {
    cluster: true,
    nodes,
    tls,
    ...(username !== undefined && { username }),
    ...(password !== undefined && { password }),
  };
}

/** `unix://[user:password@]/path/to/redis.sock[?db=N]`: the socket's absolute path, database and credentials. */
function unixSocket(url: string): { path: string; db?: number; username?: string; password?: string } {
  const rest = url.replace(UNIX_SCHEME, '');
  const at = rest.startsWith('/') ? -1 : rest.indexOf('@');
  const [user, pass] = at < 0 ? [] : rest.slice(0, at).split(/:(.*)/s);
  // The host part is empty; a placeholder lets `URL` split the path from the query.
  const parsed = new URL(`unix://socket${rest.slice(at + 1)}`);
  const path = decoded(parsed.pathname);
  if (!rest.slice(at + 1).startsWith('/') || path === '/') {
    throw new Error('REDIS_URL names no socket: write unix:///absolute/path/to/redis.sock[?db=N]');
  }
  const dbText = parsed.searchParams.get('db');
  const db = dbText === null ? undefined : Number(dbText);
  if (db !== undefined && !(dbText !== '' && Number.isInteger(db) && db >= 0)) {
    throw new Error(`REDIS_URL's db must be a database number (got ${JSON.stringify(dbText)})`);
  }
  return {
    path,
    ...(db !== undefined && { db }),
    ...(user && { username: decoded(user) }),
    ...(pass && { password: decoded(pass) }),
  };
}

/** One server's URL as ioredis will read it: its credentials must decode (ioredis would throw a bare URIError). */
function checkedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url; // left to ioredis, as before this check
  }
  decoded(parsed.username);
  decoded(parsed.password);
  return url;
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Error('REDIS_URL has a malformed %-escape (write a % in a password as %25)');
  }
}

/** Whether `REDIS_URL` names a Redis Cluster. */
export function isRedisCluster(url: string): boolean {
  return redisTarget(url).cluster;
}

/**
 * A Redis connection for commands. Blocking reads (XREADGROUP BLOCK) and BullMQ workers take their own
 * connections via `duplicate()`.
 *
 * On a Redis Cluster this is an ioredis `Cluster`, typed as `Redis`: the apps only send commands whose keys share
 * one hash tag (every key family of `Keyspace` carries its partition's, `{p<n>}`, or a fixed one such as `{bull}`),
 * which `Cluster` routes like a single server; `duplicate()` takes the same seed nodes.
 */
export function createRedis(url: string, name: string, extra: RedisOptions = {}): Redis {
  const options: RedisOptions = {
    connectionName: name,
    // Commands wait while the connection is re-established instead of failing after 20 retries; the apps'
    // health endpoint reports the outage meanwhile.
    maxRetriesPerRequest: null,
    enableAutoPipelining: true,
    ...extra,
  };
  const target = redisTarget(url);
  if (!target.cluster)
    return 'socket' in target ? new Redis({ ...options, ...target.socket }) : new Redis(url, options);
  // No auto-pipelining on a cluster: ioredis batches per node and routes a batch by its first key it can find, so a
  // command whose key it cannot locate (XGROUP CREATE, a custom command) lands on a random node and its MOVED
  // reply is not followed (redis/ioredis#1890, #2075). Plain pipelines and Lua scripts stay within one slot here.
  const { enableAutoPipelining: _unused, ...redisOptions } = options;
  return new Cluster(target.nodes, {
    enableAutoPipelining: false,
    redisOptions: {
      ...redisOptions,
      ...(target.username !== undefined && { username: target.username }),
      ...(target.password !== undefined && { password: target.password }),
      ...(target.tls && { tls: {} }),
    },
  }) as unknown as Redis;
}
