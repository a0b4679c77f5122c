import 'reflect-metadata';
import { cpus } from 'node:os';
import { economy } from './economy.scenario.js';
import { idle } from './idle.scenario.js';
import { ingest, INGEST_TRANSPORTS, type IngestTransport } from './ingest.scenario.js';
import { latency } from './latency.scenario.js';
import { memoryRecall } from './memory-recall.scenario.js';
import { scale } from './scale.scenario.js';
import { fairness } from './fairness.scenario.js';
import { schedulerMemory } from './scheduler-memory.scenario.js';
import { keywords } from './keywords.scenario.js';
import { steady } from './steady.scenario.js';
import { wire } from './wire.scenario.js';

type Scenario = (flags: Map<string, string>) => Promise<Record<string, unknown>>;

const number = (flags: Map<string, string>, name: string, fallback: number): number => {
  const value = flags.get(name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`--${name} must be a positive number (got ${value})`);
  return parsed;
};

/** A setting that 0 turns off. */
const nonNegative = (flags: Map<string, string>, name: string, fallback: number): number => {
  const value = flags.get(name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0)
    throw new Error(`--${name} must be 0 or a positive number (got ${value})`);
  return parsed;
};

function projectorPlacement(value: string): 'inline' | 'thread' {
  if (value !== 'inline' && value !== 'thread') throw new Error(`--projector must be inline or thread (got ${value})`);
  return value;
}

function ingestTransport(value: string): IngestTransport {
  const transport = INGEST_TRANSPORTS.find((t) => t === value);
  if (!transport) throw new Error(`--transport must be one of ${INGEST_TRANSPORTS.join(', ')} (got ${value})`);
  return transport;
}

const SCENARIOS: Record<string, Scenario> = {
  ingest: (flags) =>
    ingest({
      messages: number(flags, 'messages', 20_000),
      groups: number(flags, 'groups', 1000),
      transport: ingestTransport(flags.get('transport') ?? 'http'),
      // NapCat opens one reverse WebSocket per bot account; an HTTP reporter posts over many keep-alive sockets.
      connections: number(flags, 'connections', flags.get('transport') === 'ws' ? 1 : 64),
      cluster: flags.has('cluster'),
      schedulers: number(flags, 'schedulers', 1),
      ...(flags.has('cpu-prof') && { cpuProfDir: flags.get('cpu-prof') }),
    }),
  economy: (flags) =>
    economy({
      input: flags.get('input') ?? 'tools/economy/sample.jsonl',
      speed: number(flags, 'speed', 20),
      llmLatencyMs: number(flags, 'llm-latency-ms', 900),
      quietMs: number(flags, 'quiet-ms', 10_000),
    }),
  latency: (flags) =>
    latency({
      directs: number(flags, 'directs', 100),
      backgroundPerSec: number(flags, 'background', 1000),
      groups: number(flags, 'groups', 1000),
      schedulers: number(flags, 'schedulers', 1),
      warmupMs: number(flags, 'warmup-ms', 2000),
      warmupDirects: nonNegative(flags, 'warmup-directs', 50),
      spacingMs: number(flags, 'spacing-ms', 200),
      ...(flags.has('direct-debounce-ms') && { directDebounceMs: number(flags, 'direct-debounce-ms', 800) }),
      ...(flags.has('projector') && { projector: projectorPlacement(flags.get('projector')!) }),
      ...(flags.has('cpu-prof') && { cpuProfDir: flags.get('cpu-prof') }),
      floor: flags.has('floor'),
    }),
  'memory-recall': (flags) =>
    memoryRecall({
      messages: number(flags, 'messages', 10_000),
      groups: number(flags, 'groups', 20),
      queries: number(flags, 'queries', 1000),
      history: number(flags, 'history', 0),
    }),
  scale: (flags) =>
    scale({
      latencyMs: number(flags, 'latency', 1000),
      rounds: Math.max(4, number(flags, 'rounds', 8)),
      concurrency: number(flags, 'concurrency', 4),
      processes: [1, 2, 4],
    }),
  fairness: (flags) =>
    fairness({
      quietGroups: number(flags, 'quiet-groups', 20),
      quietPerSec: number(flags, 'quiet-rate', 1),
      floodFactor: number(flags, 'flood-factor', 10),
      busyGroups: number(flags, 'busy-groups', 10),
      seconds: number(flags, 'seconds', 10),
      llmMs: number(flags, 'llm-ms', 100),
    }),
  'scheduler-memory': (flags) =>
    schedulerMemory({
      groups: number(flags, 'groups', 10_000),
      eventsPerGroup: number(flags, 'events-per-group', 20),
      settleSeconds: number(flags, 'settle-s', 45),
      ...(flags.has('heap-mb') ? { heapMb: number(flags, 'heap-mb', 256) } : {}),
      ...(flags.has('heap-compact-quiet-ms')
        ? { heapCompactQuietMs: nonNegative(flags, 'heap-compact-quiet-ms', 5000) }
        : {}),
    }),
  idle: (flags) =>
    idle({ warmupMs: number(flags, 'warmup-ms', 5_000), measureMs: number(flags, 'measure-ms', 20_000) }),
  steady: (flags) =>
    steady({
      rate: number(flags, 'rate', 100),
      groups: number(flags, 'groups', 1000),
      warmupMs: number(flags, 'warmup-ms', 15_000),
      measureMs: number(flags, 'measure-ms', 20_000),
      transport: ingestTransport(flags.get('transport') ?? 'http'),
      ...(flags.has('cpu-prof') && { cpuProfDir: flags.get('cpu-prof') }),
    }),
  keywords: (flags) => keywords({ terms: number(flags, 'terms', 10_000), megabytes: number(flags, 'megabytes', 8) }),
  wire: (flags) =>
    wire({
      commits: number(flags, 'commits', 5000),
      rounds: number(flags, 'rounds', 6),
      inFlight: number(flags, 'in-flight', 64),
    }),
};

/** Flags that take no value. */
const SWITCHES = new Set(['cluster', 'floor']);

function parse(argv: string[]): { scenario: string | undefined; json: boolean; flags: Map<string, string> } {
  const flags = new Map<string, string>();
  let scenario: string | undefined;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json') json = true;
    else if (arg.startsWith('--') && SWITCHES.has(arg.slice(2))) flags.set(arg.slice(2), 'true');
    else if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split('=', 2);
      flags.set(name!, inline ?? argv[++i] ?? '');
    } else scenario ??= arg;
  }
  return { scenario, json, flags };
}

const { scenario, json, flags } = parse(process.argv.slice(2));
const run = scenario ? SCENARIOS[scenario] : undefined;
if (!run) {
  process.stderr.write(
    `usage: npm run bench -- <scenario> [--json] [flags]\nscenarios: ${Object.keys(SCENARIOS).join(', ')}\n`,
  );
  process.exit(64);
}
const started = new Date();
const result = {
  ...(await run(flags)),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
  date: started.toISOString(),
};
if (!json) {
  for (const [key, value] of Object.entries(result)) {
    process.stdout.write(`${key.padEnd(22)} ${typeof value === 'object' ? JSON.stringify(value) : String(value)}\n`);
  }
}
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
