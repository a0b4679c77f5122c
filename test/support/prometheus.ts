import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { freePort } from '@app/testing';

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

/** How many ports a start tries before it gives up: each lost only to a socket that took the port meanwhile. */
const START_ATTEMPTS = 3;

/**
 * A real Prometheus on a port the kernel had free, scraping the given targets every second and evaluating the given
 * rule files every second; started and removed (with its data directory) by the test itself. The port is free when
 * it is chosen, not when Prometheus binds it: a client socket of anything else on the machine may take it in
 * between, so a start that finds it taken tries another.
 */
export class PrometheusServer {
  private child: ChildProcess | undefined;
  private chosenPort: number | undefined;

  constructor(
    private readonly dir: string,
    private readonly targets: ScrapeTarget[],
    private readonly ruleFiles: string[],
    /** Where each attempt's port comes from (a test gives a taken one first). */
    private readonly ports: () => Promise<number> = freePort,
  ) {}

  get port(): number {
    if (this.chosenPort === undefined) throw new Error('prometheus has no port before start()');
    return this.chosenPort;
  }

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
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.listen(configFile, await this.ports());
      if (outcome === 'ready') return;
      if (outcome === 'port_taken' && attempt < START_ATTEMPTS) continue;
      throw new Error(`prometheus exited:\n${this.tail()}`);
    }
  }

  /** One start on `port`: ready, or exited (because the port was taken meanwhile, or for another reason). */
  private async listen(configFile: string, port: number): Promise<'ready' | 'port_taken' | 'exited'> {
    this.chosenPort = port;
    const log = createWriteStream(this.logFile);
    const child = spawn(
      PROMETHEUS_BIN,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(this.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // Both streams write to one file, which is closed once the process and both streams have ended.
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    const logged = new Promise<void>((done) => child.once('close', () => log.end(done)));
    this.child = child;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) {
        await logged;
        return /bind: address already in use/.test(this.tail()) ? 'port_taken' : 'exited';
      }
      try {
        if ((await fetch(`${this.url}/-/ready`, { signal: AbortSignal.timeout(1000) })).ok) return 'ready';
      } catch {
        // not listening yet, or not answering
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
