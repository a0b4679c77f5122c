import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from '@app/testing';

/**
 * A redis-server of the harness's own: a spare port, its own data directory, append-only file with `everysec`
 * fsync, started and stopped by the harness. The shared Redis on 6379 is never touched, so the harness may
 * restart this one (and kill it) without disturbing anyone else.
 */
export class OwnRedisServer {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'qunli-harness-redis-'));
  port = 0;
  restarts = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
        '--save',
        '',
        '--logfile',
        join(this.dir, 'redis.log'),
      ],
      { stdio: 'ignore' },
    );
    child.once('error', () => undefined);
    this.child = child;
    await this.waitReady();
  }

  /** A client for the harness's own checks. */
  client(): Redis {
    const client = new Redis(this.url, { maxRetriesPerRequest: 20 });
    // While the server restarts the client reconnects on its own; a harness check that needs it waits for that.
    client.on('error', () => undefined);
    return client;
  }

  /**
   * Restart as an operator would: `SHUTDOWN` (which fsyncs the append-only file) and start again on the same port
   * and directory, or, with `crash`, SIGKILL — then up to one second of acknowledged writes may be gone, which is
   * what `everysec` promises.
   */
  async restart(options: { crash?: boolean; downMs?: number } = {}): Promise<void> {
    await this.halt(options.crash ? 'SIGKILL' : 'shutdown');
    if (options.downMs) await sleep(options.downMs);
    this.restarts += 1;
    await this.start();
  }

  async stop(): Promise<void> {
    await this.halt('shutdown');
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async halt(how: 'shutdown' | 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    if (how === 'SIGKILL') child.kill('SIGKILL');
    else {
      const admin = new Redis(this.url, { maxRetriesPerRequest: 1, lazyConnect: true });
      admin.on('error', () => undefined);
      try {
        await admin.connect();
        await admin.call('SHUTDOWN').catch(() => undefined);
      } catch {
        child.kill('SIGTERM');
      } finally {
        admin.disconnect();
      }
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    this.child = undefined;
  }

  private async waitReady(): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const probe = new Redis(this.url, { maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        // Loading the append-only file answers LOADING until done.
        if ((await probe.ping()) === 'PONG') return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`own redis-server on ${this.port} did not start`, { cause: error });
      } finally {
        probe.disconnect();
      }
      await sleep(100);
    }
  }
}
