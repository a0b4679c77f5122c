import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { Redis } from 'ioredis';
import pg from 'pg';
import {
  AppProcess,
  assertBuilt,
  createTestDatabase,
  deleteKeys,
  freePort,
  PORT_SETTING,
  REPO_ROOT,
  testRedis,
  uniquePrefix,
  type AppUnderTest,
  type TestDatabase,
} from '@app/testing';
import { OwnRedisServer } from './redis-server.js';
import { knownSettings } from './settings.js';
import { TcpProxy } from './tcp-proxy.js';

export interface HarnessStackOptions {
  /** Apps to run, each once unless `replicas` says more. */
  apps: AppUnderTest[];
  replicas?: Partial<Record<AppUnderTest, number>>;
  /** Run a redis-server of the harness's own (restartable) instead of a key prefix on the shared one. */
  ownRedis?: boolean;
  /** Route the apps' Postgres connections through a proxy the harness can cut. */
  postgresProxy?: boolean;
  /** Settings every app needs (ports, URLs, identity are added). */
  env: Record<string, string>;
  /** Settings applied only when this build knows them (see `knownSettings`). */
  optional?: Record<string, string>;
  label: string;
}

/** One running process of the stack: `cognition#2` is the second cognition replica. */
export interface Member {
  name: string;
  app: AppUnderTest;
  process: AppProcess;
}

const POSTGRES_HOST = '127.0.0.1';

/**
 * A deployment for one harness run: its own database (cloned from the migrated template), its own Redis (a
 * process of its own, or a prefix on the shared one), optionally a cuttable proxy in front of Postgres, and the
 * apps as real processes that the harness may SIGKILL, SIGSTOP and restart.
 */
export class HarnessStack {
  readonly members: Member[] = [];
  readonly prefix: string;
  redisServer: OwnRedisServer | undefined;
  postgresProxy: TcpProxy | undefined;
  sql!: pg.Client;
  redis!: Redis;
  droppedSettings: string[] = [];
  private db: TestDatabase | undefined;

  constructor(private readonly options: HarnessStackOptions) {
    this.prefix = uniquePrefix(options.label);
  }

  get logDir(): string {
    return join(tmpdir(), `qunli-${this.prefix}`);
  }

  member(name: string): Member {
    const found = this.members.find((m) => m.name === name || m.name === `${name}#1`);
    if (!found) throw new Error(`no ${name} in this stack (have ${this.members.map((m) => m.name).join(', ')})`);
    return found;
  }

  url(name: string): string {
    return this.member(name).process.url;
  }

  async start(): Promise<void> {
    assertBuilt(this.options.apps);
    this.db = await createTestDatabase(this.options.label);
    this.sql = new pg.Client({ connectionString: this.db.url });
    await this.sql.connect();
    let databaseUrl = this.db.url;
    if (this.options.postgresProxy) {
      const target = new URL(this.db.url);
      this.postgresProxy = new TcpProxy(target.hostname || POSTGRES_HOST, Number(target.port || 5432));
      await this.postgresProxy.start();
      target.hostname = '127.0.0.1';
      target.port = String(this.postgresProxy.port);
      databaseUrl = target.toString();
    }
    let redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    if (this.options.ownRedis) {
      this.redisServer = new OwnRedisServer();
      await this.redisServer.start();
      redisUrl = this.redisServer.url;
      this.redis = this.redisServer.client();
    } else {
      this.redis = testRedis();
    }
    const { env, dropped } = knownSettings(
      {
        REDIS_URL: redisUrl,
        DATABASE_URL: databaseUrl,
        QUNLI_REDIS_PREFIX: this.prefix,
        QUNLI_HTTP_HOST: '127.0.0.1',
        QUNLI_LOG_LEVEL: 'warn',
        QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
        ...this.options.env,
      },
      this.options.optional,
    );
    this.droppedSettings = dropped;
    for (const app of this.options.apps) {
      const count = this.options.replicas?.[app] ?? 1;
      for (let i = 1; i <= count; i++) {
        const port = await freePort();
        const name = `${app}#${i}`;
        const processEnv = { ...env, [PORT_SETTING[app]]: String(port), QUNLI_INSTANCE_ID: `${app}-${i}-harness` };
        this.members.push({ name, app, process: new AppProcess(app, processEnv, port, join(this.logDir, name)) });
      }
    }
    await Promise.all(this.members.map((m) => m.process.start(90_000)));
  }

  /** SIGKILL one process, then start it again (same port, same settings). */
  async crash(name: string, downMs = 500): Promise<void> {
    const { process: app } = this.member(name);
    await app.kill('SIGKILL');
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    await app.start(90_000);
  }

  /** SIGSTOP one process for `ms`, then SIGCONT: it freezes holding whatever leases, claims and locks it had. */
  async freeze(name: string, ms: number): Promise<void> {
    const pid = this.member(name).process.pid;
    if (pid === undefined) throw new Error(`${name} is not running`);
    process.kill(pid, 'SIGSTOP');
    try {
      await new Promise((resolve) => setTimeout(resolve, ms));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  }

  /** Whether every process still runs (none exited on its own). */
  alive(): { name: string; alive: boolean }[] {
    return this.members.map((m) => {
      const pid = m.process.pid;
      let alive = pid !== undefined;
      if (alive) {
        try {
          process.kill(pid!, 0);
        } catch {
          alive = false;
        }
      }
      return { name: m.name, alive };
    });
  }

  tails(lines = 20): string {
    return this.members.map((m) => `--- ${m.name} (${m.process.logFile})\n${m.process.tail(lines)}`).join('\n');
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.process.stop()));
    await this.sql?.end().catch(() => undefined);
    // QUNLI_HARNESS_KEEP_DATABASE=1 keeps the run's database to look into afterwards (named on stderr).
    if (process.env.QUNLI_HARNESS_KEEP_DATABASE === '1' && this.db)
      process.stderr.write(`kept database ${this.db.url}\n`);
    else await this.db?.drop();
    if (this.redis) {
      if (!this.redisServer) await deleteKeys(this.redis, this.prefix);
      this.redis.disconnect();
    }
    await this.redisServer?.stop();
    await this.postgresProxy?.stop();
  }
}
