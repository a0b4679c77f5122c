import 'reflect-metadata';
import { cpus } from 'node:os';
import { FUZZ_TRANSPORTS, runFuzz, type FuzzTransport } from './fuzz.run.js';
import { cliFlags } from '../harness/cli-flags.js';

/**
 * `npm run fuzz [-- --payloads N --seed S --transports http,ws_reverse,ws_forward --concurrency C]`: last stdout
 * line is one JSON object with `payloads`, `accepted`, `rejected`, `crashes`, `rssBeforeMb`, `rssAfterMb`.
 * Exits 1 when a payload crashed ingress or went unanswered.
 */
function positive(map: Map<string, string>, name: string, fallback: number): number {
  const value = map.get(name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) throw new Error(`--${name} must be a positive integer (got ${value})`);
  return parsed;
}

const argv = cliFlags(process.argv.slice(2));
const transports = (argv.get('transports') ?? FUZZ_TRANSPORTS.join(',')).split(',') as FuzzTransport[];
for (const t of transports) {
  if (!FUZZ_TRANSPORTS.includes(t)) throw new Error(`unknown transport ${t} (have ${FUZZ_TRANSPORTS.join(', ')})`);
}
const started = new Date();
const report = await runFuzz({
  payloads: positive(argv, 'payloads', 100_000),
  seed: positive(argv, 'seed', 20_261),
  transports,
  concurrency: positive(argv, 'concurrency', 32),
  wsBatch: positive(argv, 'ws-batch', 500),
  log: (line) => process.stderr.write(`[fuzz] ${line}\n`),
});
const result = {
  ...report,
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
  date: started.toISOString(),
  seconds: Math.round((Date.now() - started.getTime()) / 1000),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(report.crashes === 0 && report.unanswered === 0 ? 0 : 1);
