import 'reflect-metadata';
import { cpus } from 'node:os';
import { PAST_CLAIM_MS, runChaos, type Disruption } from './chaos.run.js';
import { cliFlags } from '../harness/cli-flags.js';

/**
 * `npm run chaos [-- --messages N --groups G --rate R --mentions 0.2 --postgres-outage-ms 30000 --redis-crash]`.
 * The last stdout line is one JSON object: `accepted`, `archived`, `lost`, `duplicateSends`, `orderViolations`,
 * `unanswered` and the details. Exits 1 when any of lost, duplicateSends, orderViolations, unanswered is not 0.
 */
function number(map: Map<string, string>, name: string, fallback: number): number {
  const value = map.get(name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${name} must be a non-negative number (got ${value})`);
  return parsed;
}

const argv = cliFlags(process.argv.slice(2));
const disruptions: Disruption[] = [
  { kind: 'crash', target: 'ingress' },
  { kind: 'crash', target: 'scheduler' },
  { kind: 'crash', target: 'cognition' },
  { kind: 'crash', target: 'outbound' },
  { kind: 'crash', target: 'projector' },
  { kind: 'freeze', target: 'outbound', ms: PAST_CLAIM_MS },
  // BullMQ's job lock is 30 s: a cognition frozen past it has its running episodes taken as stalled.
  { kind: 'freeze', target: 'cognition', ms: number(argv, 'cognition-freeze-ms', 35_000) },
  { kind: 'redis-restart', crash: argv.has('redis-crash') },
  { kind: 'postgres-outage', ms: number(argv, 'postgres-outage-ms', 30_000) },
];
const started = new Date();
const report = await runChaos({
  messages: number(argv, 'messages', 10_000),
  groups: number(argv, 'groups', 50),
  mentionShare: number(argv, 'mentions', 0.2),
  ...(argv.has('rate') && { rate: number(argv, 'rate', 60) }),
  gapMs: number(argv, 'gap-ms', 5000),
  seed: number(argv, 'seed', 11),
  disruptions,
  malformedPerSecond: number(argv, 'malformed-per-second', 10),
  llmLatencyMs: number(argv, 'llm-latency-ms', 150),
  outboundReplicas: number(argv, 'outbound-replicas', 2),
  cognitionReplicas: number(argv, 'cognition-replicas', 1),
  quietMs: number(argv, 'quiet-ms', 20_000),
  settleTimeoutMs: number(argv, 'settle-timeout-ms', 600_000),
  log: (line) => process.stderr.write(`[chaos] ${line}\n`),
});
const result = {
  ...report,
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
  date: started.toISOString(),
  seconds: Math.round((Date.now() - started.getTime()) / 1000),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
const clean =
  report.lost === 0 && report.duplicateSends === 0 && report.orderViolations === 0 && report.unanswered === 0;
process.exit(clean ? 0 : 1);
