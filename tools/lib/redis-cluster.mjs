import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

/**
 * A throwaway local Redis Cluster of three masters (no replicas) on spare ports, in a temp directory, for the
 * `cluster` test tier (test/setup/cluster-global-setup.mjs) and `npm run bench -- ingest --cluster`. Plain ESM
 * JavaScript: Jest loads a global setup outside its module system and transformer, so it cannot import TypeScript.
 */

const run = promisify(execFile);

/** @param {number} port @returns {Promise<boolean>} */
function portFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Where the masters' ports are drawn from: 20000–22767, so that they and their cluster bus ports (+10000, up to
 * 32767) stay below Linux's default ephemeral range (32768–60999). A port found free could otherwise be taken by
 * any client socket on the machine before redis-server binds it.
 */
const FIRST_PORT = 20_000;
const PORT_CHOICES = 2_768;

/** Ports whose cluster bus port (+10000) is free too. */
/** @param {number} count */
async function sparePorts(count) {
  /** @type {number[]} */
  const ports = [];
  for (let tries = 0; ports.length < count && tries < 500; tries++) {
    const port = FIRST_PORT + Math.floor(Math.random() * PORT_CHOICES);
    if (ports.includes(port)) continue;
    if ((await portFree(port)) && (await portFree(port + 10_000))) ports.push(port);
  }
  if (ports.length < count) throw new Error('no spare ports for a local Redis Cluster');
  return ports;
}

/** @param {number} port @param {string[]} args */
async function cli(port, ...args) {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args]);
  return stdout;
}

/** @param {string} what @param {() => Promise<boolean>} probe */
async function until(what, probe, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`local Redis Cluster: timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * @param {number} masters
 * @returns {Promise<{ url: string, ports: number[], stop(): Promise<void> }>} `url` is
 *   `redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,…`
 */
export async function startRedisCluster(masters = 3) {
  const dir = mkdtempSync(join(tmpdir(), 'qunli-redis-cluster-'));
  const ports = await sparePorts(masters);
  const servers = ports.map((port) =>
    spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '5000',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--logfile',
        join(dir, `redis-${port}.log`),
      ],
      { stdio: 'ignore' },
    ),
  );
  const stop = async () => {
    await Promise.all(
      servers.map(
        (server) =>
          new Promise((resolve) => {
            if (server.exitCode !== null || server.signalCode !== null) return resolve();
            server.once('exit', () => resolve());
            server.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports)
      await until(`redis-server on ${port}`, async () => (await cli(port, 'PING')).trim() === 'PONG');
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    for (const port of ports) {
      await until(`cluster_state:ok on ${port}`, async () =>
        (await cli(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'),
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `redis+cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`, ports, stop };
}
