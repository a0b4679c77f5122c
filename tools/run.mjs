#!/usr/bin/env node
/**
 * `node tools/run.mjs <tool> [args…]` — what `npm run migrate|replay|bench|chaos|simulator` call.
 *
 * Builds first when dist/ is missing or older than the sources, then runs `node dist/tools/<tool>/main.js args…`
 * with the terminal attached and exits with the tool's exit code.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { build, staleReason } from './lib/build.mjs';
import { UserFacingError, dim, fail, runMain, stepAside } from './lib/console.mjs';

const ROOT = join(import.meta.dirname, '..');
const TOOL_NAME = /^[a-z][a-z0-9-]*$/;
/** Signals a person sends the runner that the tool should see too (Ctrl-C reaches the tool from the terminal). */
const FORWARDED = ['SIGTERM', 'SIGHUP'];

function availableTools() {
  return readdirSync(join(ROOT, 'tools'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(ROOT, 'tools', entry.name, 'main.ts')))
    .map((entry) => entry.name)
    .sort();
}

function usage() {
  const tools = availableTools();
  return `usage: node tools/run.mjs <tool> [args…]\ntools: ${tools.length > 0 ? tools.join(', ') : '(none yet)'}`;
}

function parseArgs(argv) {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h') throw new UserFacingError(usage(), 64);
  if (!TOOL_NAME.test(name)) throw new UserFacingError(`"${name}" is not a tool name.\n${usage()}`, 64);
  return { name, args };
}

async function buildIfStale() {
  const reason = staleReason(ROOT);
  if (reason === undefined) return;
  // stdout is the tool's (`--json` output); the build speaks on stderr, and only when it fails.
  stepAside(`building… ${dim(`(${reason})`)}`);
  await build(ROOT, { quiet: true });
}

/** Exit the way the tool did: same code, or the same signal so a parent shell sees e.g. "Interrupted". */
function exitLike(code, signal) {
  if (signal) {
    for (const name of [...FORWARDED, 'SIGINT']) process.removeAllListeners(name);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
}

function runTool(entry, args) {
  const child = spawn(process.execPath, [entry, ...args], { cwd: ROOT, stdio: 'inherit' });
  // The terminal delivers Ctrl-C to the tool itself; the runner waits for it to finish and keeps its exit code.
  process.on('SIGINT', () => undefined);
  for (const signal of FORWARDED) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    fail(`could not start ${entry}: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', exitLike);
}

await runMain(async () => {
  const { name, args } = parseArgs(process.argv.slice(2));
  if (!existsSync(join(ROOT, 'tools', name))) throw new UserFacingError(`there is no tool "${name}".\n${usage()}`, 64);
  await buildIfStale();
  const entry = join(ROOT, 'dist', 'tools', name, 'main.js');
  if (!existsSync(entry))
    throw new UserFacingError(`the build produced no ${entry}; does tools/${name}/main.ts exist?`);
  runTool(entry, args);
});
