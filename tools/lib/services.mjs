/**
 * Redis and PostgreSQL for `npm run up`: is each one answering at its URL, and if not, can a local one be started?
 * Every check is a real connection; a listening port alone does not prove the server answers.
 */
import { Buffer } from 'node:buffer';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { URL } from 'node:url';
import { UserFacingError } from './console.mjs';
import { findExecutable, run } from './processes.mjs';

const CONNECT_TIMEOUT_MS = 3000;
const START_TIMEOUT_MS = 30_000;
/** Where Homebrew puts executables (Apple silicon, Intel); not always on PATH of a fresh shell. */
const HOMEBREW_BIN_DIRS = ['/opt/homebrew/bin', '/usr/local/bin'];

/**
 * Host, port and credentials of a redis:// or postgres:// URL, with the protocol's default port; for a server on a
 * Unix socket its `path` instead: Redis as `unix://[user:password@]/path/redis.sock[?db=N]` (as the apps take it, ADR
 * 0048), PostgreSQL as pg takes it, a socket directory in `?host=/var/run/postgresql` or as an escaped host
 * (`postgres://%2Fvar%2Frun%2Fpostgresql/qunli`).
 */
export function parseServiceUrl(url, defaultPort, setting = 'the URL') {
  const socket = /^unix:\/\/(?:([^@/]*)@)?(\/[^?]*)/i.exec(url);
  if (socket) {
    const [user = '', password = ''] = (socket[1] ?? '').split(/:(.*)/s);
    return {
      protocol: 'unix:',
      path: decoded(socket[2], setting),
      user: decoded(user, setting),
      password: decoded(password, setting),
    };
  }
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new UserFacingError(`${setting} is not a valid URL`);
  }
  const credentials = { user: decoded(parsed.username, setting), password: decoded(parsed.password, setting) };
  // pg lets `?host=` override the URL's host, and reads a host that starts with a slash as a socket directory.
  const hostParam = /^postgres(ql)?:$/.test(parsed.protocol) ? parsed.searchParams.get('host') : null;
  const host = hostParam || decoded(parsed.hostname, setting);
  if (host.startsWith('/')) return { protocol: parsed.protocol, path: host, ...credentials };
  return {
    protocol: parsed.protocol,
    host: host.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: parsed.port === '' ? defaultPort : Number(parsed.port),
    ...credentials,
  };
}

/** A %-escaped part of a URL, decoded; a malformed escape is named without printing the URL (it may hold a password). */
function decoded(part, setting) {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new UserFacingError(
      `${setting} has a malformed %-escape (a % not followed by two hex digits): write % as %25`,
    );
  }
}

/** Only a server on this machine is one `npm run up` may start. */
export function isLocalHost(host) {
  return ['localhost', '::1', '0.0.0.0', '::'].includes(host) || host.startsWith('127.');
}

/** A URL safe to print: the password replaced by asterisks. */
export function redact(url) {
  if (/^unix:\/\//i.test(url)) return url.replace(/^(unix:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Redis

function respCommand(...parts) {
  return `*${parts.length}\r\n${parts.map((part) => `$${Buffer.byteLength(part)}\r\n${part}\r\n`).join('')}`;
}

/**
 * One RESP conversation: AUTH when the URL has a password, then PING.
 * Resolves `{ state: 'up' }`, `{ state: 'down', reason }` (nothing answered) or `{ state: 'refused', reason }`
 * (a server answered but will not serve us, e.g. a wrong password).
 */
export function pingRedis(url) {
  const { protocol, host, port, path, user, password } = parseServiceUrl(url, 6379);
  const commands = [];
  if (password !== '') commands.push(user !== '' ? respCommand('AUTH', user, password) : respCommand('AUTH', password));
  commands.push(respCommand('PING'));
  return new Promise((resolve) => {
    const socket =
      protocol === 'rediss:'
        ? tls.connect({ host, port, servername: host })
        : net.connect(path !== undefined ? { path } : { host, port });
    let replies = '';
    const finish = (result) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => finish({ state: 'down', reason: 'no answer within 3 s' }));
    socket.on('error', (error) => finish({ state: 'down', reason: error.message || error.code }));
    socket.once(protocol === 'rediss:' ? 'secureConnect' : 'connect', () => socket.write(commands.join('')));
    socket.on('data', (chunk) => {
      replies += chunk.toString('utf8');
      const lines = replies.split('\r\n').filter((line) => line !== '');
      if (lines.length < commands.length) return;
      const error = lines.find((line) => line.startsWith('-'));
      if (error !== undefined) finish({ state: 'refused', reason: error.slice(1) });
      else if (lines.at(-1) === '+PONG') finish({ state: 'up' });
      else finish({ state: 'refused', reason: `unexpected reply ${JSON.stringify(lines.at(-1))}` });
    });
  });
}

/** Start a local redis-server in the background with the settings BullMQ needs (AOF, noeviction). */
export async function startRedis(root, port) {
  const redisServer = findExecutable('redis-server', HOMEBREW_BIN_DIRS);
  if (redisServer === undefined) throw notInstalled('Redis', INSTALL_HINTS.redis, 'REDIS_URL');
  const dir = join(root, '.qunli', 'redis');
  mkdirSync(dir, { recursive: true });
  // Bound to loopback: a Redis without a password must not be reachable from the network.
  const options = {
    daemonize: 'yes',
    port: String(port),
    bind: ['127.0.0.1', '-::1'],
    appendonly: 'yes',
    appendfsync: 'everysec',
    'maxmemory-policy': 'noeviction',
    dir,
    logfile: join(dir, 'redis.log'),
  };
  const args = Object.entries(options).flatMap(([name, value]) => [`--${name}`, ...[value].flat()]);
  await run(redisServer, args, { quiet: true });
  return { logFile: join(dir, 'redis.log'), stopHint: `redis-cli -p ${port} shutdown` };
}

// ---------------------------------------------------------------------------------------------------------------
// PostgreSQL

const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOENT',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  '57P03', // "the database system is starting up": it will answer shortly.
]);

function isNetworkError(error) {
  if (error instanceof AggregateError) return error.errors.every(isNetworkError);
  const { code, message } = /** @type {{ code?: string, message?: string }} */ (error ?? {});
  if (code !== undefined && NETWORK_ERRORS.has(code)) return true;
  return /timeout|Connection terminated/i.test(message ?? '');
}

function postgresReason(error) {
  if (error instanceof AggregateError) return error.errors.map((e) => e.message).join('; ');
  const message = String(error?.message ?? error);
  // pg's own wording when the server asks for a password that the URL does not carry.
  if (message.includes('client password must be a string')) return 'the server asks for a password; the URL has none';
  return message;
}

/**
 * Connect with the `pg` client and run `select 1`. A missing database counts as up: the migrate tool creates it.
 * Resolves `{ state: 'up' | 'down' | 'refused', reason? }` like pingRedis.
 */
export async function probePostgres(url) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // A connection that breaks after the probe is not this probe's concern; without a listener it would crash us.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return { state: 'up' };
  } catch (error) {
    if (error?.code === '3D000') return { state: 'up', reason: 'the database does not exist yet; migrate creates it' };
    return { state: isNetworkError(error) ? 'down' : 'refused', reason: postgresReason(error) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Debian's clusters (`pg_lsclusters`): version, name, port, status. */
async function debianClusters(pgLsclusters) {
  const { execFile } = await import('node:child_process');
  const output = await new Promise((resolve, reject) =>
    execFile(pgLsclusters, ['--no-header'], (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
  return String(output)
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length >= 4)
    .map(([version, name, port, status]) => ({ version, name, port: Number(port), status }));
}

/** Debian and Ubuntu: start the packaged cluster that owns the port (the machine's own start command). */
async function startDebianCluster(pgLsclusters, port) {
  const clusters = await debianClusters(pgLsclusters);
  const cluster = clusters.find((candidate) => candidate.port === port);
  if (cluster === undefined) {
    const known = clusters.map((c) => `${c.version}/${c.name} on port ${c.port}`).join(', ') || 'none';
    throw new UserFacingError(
      `PostgreSQL is installed but no cluster uses port ${port} (clusters: ${known}).\n` +
        `  Point DATABASE_URL at one of them, or create one: sudo pg_createcluster <version> main --port ${port} --start`,
    );
  }
  const args = ['--skip-systemctl-redirect', cluster.version, cluster.name, 'start'];
  try {
    await run('pg_ctlcluster', args, { quiet: true });
  } catch (error) {
    throw new UserFacingError(
      `could not start PostgreSQL cluster ${cluster.version}/${cluster.name}: ${error instanceof Error ? error.message : error}\n` +
        `  Start it yourself (sudo pg_ctlcluster ${cluster.version} ${cluster.name} start, or sudo systemctl start postgresql) and run npm run up again.`,
    );
  }
  return { stopHint: `pg_ctlcluster ${cluster.version} ${cluster.name} stop` };
}

/** Homebrew installs PostgreSQL keg-only (postgresql@16), off PATH. */
function homebrewPostgresDirs() {
  const dirs = [];
  for (const prefix of ['/opt/homebrew/opt', '/usr/local/opt']) {
    if (!existsSync(prefix)) continue;
    for (const entry of readdirSync(prefix)) {
      if (entry.startsWith('postgresql')) dirs.push(join(prefix, entry, 'bin'));
    }
  }
  return dirs;
}

/** Elsewhere: a cluster of our own in .qunli/postgres, trust auth for the `postgres` role, loopback only. */
async function startOwnCluster(root, pgCtl, port) {
  if (process.getuid?.() === 0) {
    throw new UserFacingError(
      'PostgreSQL refuses to run as root. Start PostgreSQL as its own user, or run npm run up as a normal user.',
    );
  }
  const base = join(root, '.qunli', 'postgres');
  const data = join(base, 'data');
  const logFile = join(base, 'postgres.log');
  mkdirSync(base, { recursive: true });
  if (!existsSync(join(data, 'PG_VERSION'))) {
    const initdb = join(pgCtl, '..', 'initdb');
    await run(initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], { quiet: true });
  }
  const serverOptions = `-p ${port} -k ${tmpdir()} -c listen_addresses=127.0.0.1`;
  await run(pgCtl, ['-D', data, '-l', logFile, '-o', serverOptions, '-w', '-t', '30', 'start'], { quiet: true });
  return { logFile, stopHint: `${pgCtl} -D ${data} stop` };
}

export async function startPostgres(root, port) {
  const pgLsclusters = findExecutable('pg_lsclusters');
  if (pgLsclusters !== undefined) return startDebianCluster(pgLsclusters, port);
  const pgCtl = findExecutable('pg_ctl', [...HOMEBREW_BIN_DIRS, ...homebrewPostgresDirs()]);
  if (pgCtl !== undefined) return startOwnCluster(root, pgCtl, port);
  throw notInstalled('PostgreSQL', INSTALL_HINTS.postgres, 'DATABASE_URL');
}

// ---------------------------------------------------------------------------------------------------------------
// Shared

export const INSTALL_HINTS = {
  redis: { debian: 'sudo apt-get install redis-server', macos: 'brew install redis' },
  postgres: { debian: 'sudo apt-get install postgresql', macos: 'brew install postgresql@16' },
};

function notInstalled(what, hint, setting) {
  return new UserFacingError(
    `${what} is not running and not installed. Install it, then run npm run up again:\n` +
      `  Debian/Ubuntu:  ${hint.debian}\n` +
      `  macOS:          ${hint.macos}\n` +
      `Or set ${setting} to a ${what} that is running.`,
  );
}

/** Poll `probe` until it reports up; a refusal or the deadline stops with the last reason. */
export async function waitUntilUp(probe, what, timeoutMs = START_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await probe();
    if (result.state === 'up') return result;
    if (result.state === 'refused' || Date.now() > deadline) {
      throw new UserFacingError(`${what} did not come up: ${result.reason}`);
    }
    await sleep(250);
  }
}
