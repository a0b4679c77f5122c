import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';

/** Debian's `prometheus` package (installed by .ci/run). */
export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus';
export const PROMTOOL_BIN = process.env.PROMTOOL_BIN ?? '/usr/bin/promtool';

export function assertPrometheusInstalled(): void {
  const missing = [PROMETHEUS_BIN, PROMTOOL_BIN].filter((bin) => !existsSync(bin));
  if (missing.length > 0) {
    throw new Error(`not installed: ${missing.join(', ')} — apt-get install prometheus (see .ci/run)`);
  }
}

/** `promtool <args>`: its exit code and everything it said. */
export function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL_BIN, args, { encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

export interface ScrapeTarget {
  job: string;
  address: string;
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * A real Prometheus on a random spare port above 20000, scraping the given targets every second and evaluating the
 * given rule files every second; started and removed (with its data directory) by the test itself.
 */
export class PrometheusServer {
  private child: ChildProcess | undefined;
  readonly port = 20000 + Math.floor(Math.random() * 40000);

  constructor(
    private readonly dir: string,
    private readonly targets: ScrapeTarget[],
    private readonly ruleFiles: string[],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get logFile(): string {
    return join(this.dir, 'prometheus.log');
  }

  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const config = {
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: this.ruleFiles,
      scrape_configs: this.targets.map((target) => ({
        job_name: target.job,
        static_configs: [{ targets: [target.address] }],
      })),
    };
    const configFile = join(this.dir, 'prometheus.yml');
    writeFileSync(configFile, stringify(config));
    const log = createWriteStream(this.logFile);
    const child = spawn(
      PROMETHEUS_BIN,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(this.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${this.port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    this.child = child;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`prometheus exited:\n${this.tail()}`);
      try {
        if ((await fetch(`${this.url}/-/ready`)).ok) return;
      } catch {
        // not listening yet
      }
      await sleep(200);
    }
    throw new Error(`prometheus not ready after 30 s:\n${this.tail()}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  tail(lines = 30): string {
    return existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n') : '';
  }

  /** An instant query; throws with Prometheus's own message when the expression is rejected. */
  async query(expr: string): Promise<PromSample[]> {
    const response = await fetch(`${this.url}/api/v1/query?${new URLSearchParams({ query: expr }).toString()}`);
    const body = (await response.json()) as {
      status: string;
      error?: string;
      data?: { resultType: string; result: PromSample[] | [number, string] };
    };
    if (body.status !== 'success') throw new Error(`query rejected: ${expr}: ${body.error}`);
    const result = body.data!.result;
    if (body.data!.resultType === 'scalar' || body.data!.resultType === 'string') {
      return [{ metric: {}, value: result as [number, string] }];
    }
    return result as PromSample[];
  }

  /** Every metric name Prometheus holds (scraped or recorded). */
  async metricNames(): Promise<Set<string>> {
    const response = await fetch(`${this.url}/api/v1/label/__name__/values`);
    const body = (await response.json()) as { data: string[] };
    return new Set(body.data);
  }

  /** The state of every scrape target, by job. */
  async targetHealth(): Promise<Record<string, string[]>> {
    const response = await fetch(`${this.url}/api/v1/targets`);
    const body = (await response.json()) as {
      data: { activeTargets: { labels: { job: string }; health: string; lastError: string }[] };
    };
    const health: Record<string, string[]> = {};
    for (const target of body.data.activeTargets) {
      (health[target.labels.job] ??= []).push(target.health === 'up' ? 'up' : `${target.health}: ${target.lastError}`);
    }
    return health;
  }

  /** Rule groups as Prometheus loaded them, with each rule's health. */
  async rules(): Promise<{ name: string; health: string; lastError?: string; type: string }[]> {
    const response = await fetch(`${this.url}/api/v1/rules`);
    const body = (await response.json()) as {
      data: { groups: { rules: { name: string; health: string; lastError?: string; type: string }[] }[] };
    };
    return body.data.groups.flatMap((group) => group.rules);
  }
}
