import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { defaultGroups, generateTranscript } from './transcript.generator.js';
import { toJsonLines } from './transcript.js';
import { cliFlags } from '../harness/cli-flags.js';

/**
 * `npm run economy:generate -- [--out FILE] [--groups 4] [--minutes 60] [--private 2] [--seed 1] [--self-id 10001]
 * [--start 2026-05-01T12:00:00Z] [--direct-share 0.04]`: writes a realistic multi-group transcript as JSON Lines
 * (stdout when no --out), ready for `npm run bench -- economy --input FILE`.
 */
function number(map: Map<string, string>, name: string, fallback: number): number {
  const value = map.get(name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${name} must be a non-negative number (got ${value})`);
  return parsed;
}

const argv = cliFlags(process.argv.slice(2).filter((a) => a !== 'generate'));
const start = Date.parse(argv.get('start') ?? '2026-05-01T12:00:00Z');
if (Number.isNaN(start)) throw new Error(`--start must be an ISO time (got ${argv.get('start')})`);
const events = generateTranscript({
  seed: number(argv, 'seed', 1),
  selfId: argv.get('self-id') ?? '10001',
  botNames: ['林小满', '小满', '满满'],
  botNickname: '林小满',
  start: Math.floor(start / 1000),
  minutes: number(argv, 'minutes', 60),
  groups: defaultGroups(number(argv, 'groups', 4)),
  privateChats: number(argv, 'private', 2),
  directShare: number(argv, 'direct-share', 0.04),
});
const text = toJsonLines(events);
const out = argv.get('out');
if (out) {
  writeFileSync(out, text);
  process.stderr.write(`wrote ${events.length} events to ${out}\n`);
} else {
  process.stdout.write(text);
}
