import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { createRedis } from '@app/platform';
import {
  AppProcess,
  assertBuilt,
  createTestDatabase,
  deleteKeys,
  freePort,
  PORT_SETTING,
  REPO_ROOT,
  uniquePrefix,
  type AppUnderTest,
  type TestDatabase,
} from '@app/testing';

export const BENCH_TOKEN = 'bench-token';
export const BENCH_SECRET = 'bench-secret';
export const BENCH_SELF_ID = '10001';

/**
 * A process's command name and the CPU time (user + system, ms) it has used so far, from `/proc/<pid>/stat`; none
 * when this is not Linux or the process is gone.
 */
export function processCpu(pid: number | string): { comm: string; ms: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // USER_HZ is 100 on Linux: a tick is 10 ms.
    return {
      comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      ms: (Number(fields[11]) + Number(fields[12])) * 10,
    };
  } catch {
    return undefined;
  }
}

export const POSTGRES_COMMS = ['postgres'];
export const REDIS_COMMS = ['redis-server'];

/**
 * CPU time (user + system, ms) used so far by every process whose command name is one of `comms`, by pid, from
 * `/proc/<pid>/stat`: the Postgres server's backends and helpers, or Redis. Other work on the same server counts
 * too (the machine may be shared), so the figure is an upper bound for this run; `cmdlineIncludes` keeps only the
 * processes whose title names it (a Postgres backend's title names its database).
 */
export function serverCpuMs(comms: readonly string[], cmdlineIncludes?: string): Map<number, number> {
  const used = new Map<number, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return used; // Not Linux: no figure.
  }
  for (const pid of pids) {
    const cpu = processCpu(pid);
    if (!cpu || !comms.includes(cpu.comm)) continue;
    try {
      if (cmdlineIncludes !== undefined && !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(cmdlineIncludes)) {
        continue;
      }
    } catch {
      continue; // The process ended meanwhile.
    }
    used.set(Number(pid), cpu.ms);
  }
  return used;
}

/** CPU (ms) the processes in `after` used since `before` (a process started meanwhile counts whole). */
export function cpuSpentMs(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
): number | undefined {
  if (after.size === 0) return undefined;
  let spent = 0;
  for (const [pid, ms] of after) spent += ms - (before.get(pid) ?? 0);
  return spent;
}

/** `QUNLI_*` settings of the bench's environment, but for the ones the bench sets for each run itself. */
function callerSettings(): Record<string, string> {
  const own = new Set(['QUNLI_REDIS_PREFIX', 'QUNLI_INSTANCE_ID', 'QUNLI_HTTP_HOST']);
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[0].startsWith('QUNLI_') && !own.has(entry[0]) && entry[1] !== undefined,
    ),
  );
}

/**
 * A throwaway deployment for one benchmark run: its own database (cloned from the migrated template), its own
 * Redis key prefix, and the chosen apps as real processes.
 */
export class BenchStack {
  /** By app name; a second replica of an app is `<app>-2`, and so on. */
  readonly apps = new Map<string, AppProcess>();
  sql!: pg.Client;
  redis!: Redis;
  prefix = uniquePrefix('bench');
  private db!: TestDatabase;

  constructor(
    private readonly names: AppUnderTest[],
    private readonly extraEnv: Record<string, string> = {},
    private readonly nodeArgs: string[] = [],
    /** Another Redis than the tests' (`REDIS_URL`): a Redis Cluster seed list the bench started, for one. */
    readonly redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    /** Processes per app (default 1): replicas split the partitions by lease, as a scaled-out deployment does. */
    private readonly replicas: Partial<Record<AppUnderTest, number>> = {},
  ) {}

  /** The benchmark database's URL (for in-process readers such as the memory-recall retrieval). */
  get databaseUrl(): string {
    return this.db.url;
  }

  get logDir(): string {
    return join(tmpdir(), `qunli-${this.prefix}`);
  }

  /** A counter's value summed over its series and over every replica of `app` (each one's `/metrics`). */
  async counterTotal(app: AppUnderTest, metric: string): Promise<number> {
    let total = 0;
    for (const [name, process] of this.apps) {
      if (name !== app && !name.startsWith(`${app}-`)) continue;
      const text = await (await fetch(`${process.url}/metrics`)).text();
      for (const match of text.matchAll(new RegExp(`^${metric}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) {
        total += Number(match[1]);
      }
    }
    return total;
  }

  url(app: AppUnderTest): string {
    const process = this.apps.get(app);
    if (!process) throw new Error(`${app} is not part of this benchmark stack`);
    return process.url;
  }

  /**
   * CPU time (user + system, ms) each app process has used so far, from `/proc/<pid>/stat`: on a machine shared
   * with other work, CPU per message says more about a change than wall-clock throughput does.
   */
  cpuMs(): Record<string, number> {
    const used: Record<string, number> = {};
    for (const [name, app] of this.apps) {
      const cpu = app.pid === undefined ? undefined : processCpu(app.pid);
      if (cpu) used[name] = cpu.ms;
    }
    return used;
  }

  async start(): Promise<void> {
    assertBuilt(this.names);
    this.db = await createTestDatabase('bench');
    this.sql = new pg.Client({ connectionString: this.db.url });
    await this.sql.connect();
    this.redis = createRedis(this.redisUrl, 'qunli-bench', { maxRetriesPerRequest: 3, enableAutoPipelining: false });
    const common: Record<string, string> = {
      // The caller's own settings reach the apps, so one setting can be compared in otherwise equal runs
      // (`QUNLI_PROJECTOR=inline npm run bench -- ingest`); the bench's and the scenario's own keys win.
      ...callerSettings(),
      REDIS_URL: this.redisUrl,
      DATABASE_URL: this.db.url,
      QUNLI_REDIS_PREFIX: this.prefix,
      QUNLI_SELF_ID: BENCH_SELF_ID,
      ONEBOT_ACCESS_TOKEN: BENCH_TOKEN,
      ONEBOT_SECRET: BENCH_SECRET,
      QUNLI_HTTP_HOST: '127.0.0.1',
      QUNLI_LOG_LEVEL: 'warn',
      QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
      ...this.extraEnv,
    };
    for (const name of this.names) {
      for (let replica = 1; replica <= (this.replicas[name] ?? 1); replica++) {
        const key = replica === 1 ? name : `${name}-${replica}`;
        const port = await freePort();
        this.apps.set(
          key,
          new AppProcess(
            name,
            { ...common, [PORT_SETTING[name]]: String(port), QUNLI_INSTANCE_ID: `${key}-bench` },
            port,
            this.logDir,
            this.nodeArgs,
            key,
          ),
        );
      }
    }
    await Promise.all([...this.apps.values()].map((app) => app.start(60_000)));
  }

  async stop(): Promise<void> {
    // A profiled app writes its profile on a graceful exit only: give a loaded machine time for it.
    const graceMs = this.nodeArgs.includes('--cpu-prof') ? 120_000 : undefined;
    await Promise.all([...this.apps.values()].map((app) => app.stop(graceMs)));
    await this.sql?.end();
    await this.db?.drop();
    if (this.redis) {
      await deleteKeys(this.redis, this.prefix);
      await this.redis.quit();
    }
  }
}
