import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The repository root, whether this file runs from `libs/testing/src` (tests) or `dist/libs/testing/src`. */
function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'apps'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no repository root above ${from}`);
  }
}

export const REPO_ROOT = findRoot(resolve(import.meta.dirname));

export type AppUnderTest = 'ingress' | 'scheduler' | 'cognition' | 'outbound' | 'life-director';

/** The setting that gives each app its HTTP port (operating contract). */
export const PORT_SETTING: Readonly<Record<AppUnderTest, string>> = {
  ingress: 'INGRESS_PORT',
  scheduler: 'SCHEDULER_PORT',
  cognition: 'COGNITION_PORT',
  outbound: 'OUTBOUND_PORT',
  'life-director': 'LIFE_DIRECTOR_PORT',
};

/**
 * Node flags an app runs with wherever qunli starts it — the image's entry point (`deploy/docker-entrypoint.sh`),
 * `npm run up` (`tools/lib/settings.mjs`) and here — so tests and benchmarks run the apps as users do
 * (`tools/deploy/node-flags.spec.ts` keeps the three the same). The scheduler allocates ≈ 290 kB per message; a
 * larger young generation (64 MB semi-spaces instead of V8's 16 MB) lets more of it die before a scavenge copies
 * it: about 7% less scheduler CPU per message in the ingest bench (docs/BENCHMARKS.md, ADR 0028).
 */
export const APP_NODE_FLAGS: Readonly<Record<AppUnderTest, readonly string[]>> = {
  ingress: [],
  scheduler: ['--max-semi-space-size=64'],
  cognition: [],
  outbound: [],
  'life-director': [],
};

export function appEntry(app: AppUnderTest): string {
  return join(REPO_ROOT, 'dist', 'apps', app, 'src', 'main.js');
}

/** Fails with a clear message when the apps have not been built (`npm run build`). */
export function assertBuilt(apps: readonly AppUnderTest[]): void {
  const missing = apps.filter((app) => !existsSync(appEntry(app)));
  if (missing.length > 0) {
    throw new Error(`not built: ${missing.map(appEntry).join(', ')} — run \`npm run build\` first`);
  }
}

/** Ports this process has handed out: an app may not have bound its port yet when the next one is asked for. */
const handedOut = new Set<number>();

/**
 * A port nobody listens on right now, and one this process has not handed out before. The kernel may give the
 * same ephemeral port to two `listen(0)` calls a moment apart once the first is closed; two apps of one deployment
 * started side by side then collided (one died with EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await unusedPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function unusedPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * One app running as a real child process (`node dist/apps/<app>/src/main.js`), its output kept in a log file so a
 * failing test can show what the app said.
 */
/** Apps this process started that still run: killed if this process exits first. */
const live = new Set<ChildProcess>();
let reaping = false;

/**
 * Kill `child` when this process exits while it still runs (`process.exit`, the end of the event loop, an uncaught
 * error), so a test or bench that crashes does not leave apps up, holding ports and CPU and reading the streams of
 * later runs. A process killed by a signal runs no exit handler: its apps stay.
 */
export function reapOnExit(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (reaping) return;
  reaping = true;
  process.once('exit', () => {
    for (const running of live) running.kill('SIGKILL');
  });
}

export class AppProcess {
  private child: ChildProcess | undefined;
  private log: WriteStream | undefined;
  readonly logFile: string;
  private exits = 0;
  /** How the last run ended: its exit code, or the signal that killed it. */
  lastExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  constructor(
    readonly app: AppUnderTest,
    private readonly env: Record<string, string>,
    readonly port: number,
    logDir: string,
    /** Extra arguments for node itself (`--cpu-prof`, `--inspect`…). */
    private readonly nodeArgs: string[] = [],
    /** The log file's name, when several processes of one app share `logDir`. */
    logName: string = app,
  ) {
    mkdirSync(logDir, { recursive: true });
    this.logFile = join(logDir, `${logName}.log`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(readyTimeoutMs = 30_000): Promise<void> {
    this.log = createWriteStream(this.logFile, { flags: 'a' });
    this.log.write(`--- start ${new Date().toISOString()}\n`);
    const child = spawn(process.execPath, [...APP_NODE_FLAGS[this.app], ...this.nodeArgs, appEntry(this.app)], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        ...(process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {}),
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    child.once('exit', (code, signal) => {
      this.exits++;
      this.lastExit = { code, signal };
    });
    this.child = child;
    reapOnExit(child);
    await this.waitHealthy(readyTimeoutMs);
  }

  private async waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const exitsBefore = this.exits;
    while (Date.now() < deadline) {
      if (this.exits > exitsBefore) {
        throw new Error(`${this.app} exited during start:\n${this.tail()}`);
      }
      try {
        const response = await fetch(`${this.url}/health`);
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`${this.app} not healthy after ${timeoutMs} ms:\n${this.tail()}`);
  }

  /** Kill without any chance to clean up (a crash). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill(signal);
    await exited;
  }

  /** Graceful stop (SIGTERM), falling back to SIGKILL. */
  async stop(timeoutMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
    await new Promise<void>((done) => this.log?.end(done) ?? done());
  }

  tail(lines = 60): string {
    if (!existsSync(this.logFile)) return '(no output)';
    return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
  }
}
