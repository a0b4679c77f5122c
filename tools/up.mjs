#!/usr/bin/env node
/**
 * `npm run up`: the whole qunli stack on one machine, from a fresh clone.
 *
 *   1. installs dependencies when node_modules is missing;
 *   2. makes sure Redis (REDIS_URL) and PostgreSQL (DATABASE_URL) answer, starting local ones when installed;
 *   3. builds, runs the migrations;
 *   4. starts the five apps and the chat simulator under one supervisor, waits until every /health answers,
 *      and says where to look.
 *
 * Only Node's own modules are imported statically: on a fresh clone nothing else is installed yet.
 */
import { existsSync } from 'node:fs';
import net from 'node:net';
import { join, relative } from 'node:path';
import process from 'node:process';
import { build, staleReason } from './lib/build.mjs';
import { UserFacingError, bold, dim, ok, runMain, step, warn, yellow } from './lib/console.mjs';
import { waitForAll } from './lib/health.mjs';
import { run } from './lib/processes.mjs';
import {
  isLocalHost,
  parseServiceUrl,
  pingRedis,
  probePostgres,
  redact,
  startPostgres,
  startRedis,
  waitUntilUp,
} from './lib/services.mjs';
import { APPS, portOf, readSettings } from './lib/settings.mjs';
import { supervise } from './lib/supervisor.mjs';

const ROOT = join(import.meta.dirname, '..');
const SIMULATOR_PORT = 8090;
/** The simulator listens on loopback only (its default --host). */
const SIMULATOR_PAGE = `http://127.0.0.1:${SIMULATOR_PORT}/`;
/** The bot's QQ number when none is configured, so @-mentions typed in the simulator reach it. */
const DEMO_SELF_ID = '10001';
const HEALTH_TIMEOUT_MS = 60_000;
/** Packages this script itself loads once installed; any of them missing means node_modules is incomplete. */
const REQUIRED_PACKAGES = ['concurrently', 'pg', 'yaml', 'typescript'];

const HELP = `usage: npm run up [-- options]

Starts Redis and PostgreSQL if needed, builds, migrates, and runs every qunli app plus the chat simulator.

options:
  --no-build       use dist/ as it is
  --no-simulator   do not start the chat simulator (it is also skipped when ONEBOT_HTTP_API_URL is set)
  -h, --help       this text
`;

function parseOptions(argv) {
  const options = { build: true, simulator: true };
  for (const arg of argv) {
    if (arg === '--no-build') options.build = false;
    else if (arg === '--no-simulator') options.simulator = false;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write(HELP);
      process.exit(0);
    } else throw new UserFacingError(`unknown option ${arg}\n\n${HELP}`, 64);
  }
  return options;
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Dependencies

async function ensureDependencies() {
  const missing = REQUIRED_PACKAGES.filter((name) => !existsSync(join(ROOT, 'node_modules', name, 'package.json')));
  if (missing.length === 0) return;
  const command = existsSync(join(ROOT, 'package-lock.json')) ? 'ci' : 'install';
  step(`installing dependencies (npm ${command}; missing: ${missing.join(', ')})…`);
  await run('npm', [command], { cwd: ROOT });
  ok('dependencies installed');
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Redis and PostgreSQL

/** Check one service; start it when it is down and local; stop with what to do when it cannot be had. */
async function ensureService({ what, setting, url, defaultPort, probe, start, refusedHint }) {
  // Read first: a URL the probe's client cannot parse is named here, not thrown from inside that client.
  const { host, port, path } = parseServiceUrl(url, defaultPort, setting);
  step(`checking ${what} at ${redact(url)}…`);
  const first = await probe(url);
  if (first.state === 'up') {
    ok(`${what} answers${first.reason ? ` (${first.reason})` : ''}`);
    return;
  }
  if (first.state === 'refused') {
    throw new UserFacingError(`${what} at ${redact(url)} answered but refused us: ${first.reason}\n  ${refusedHint}`);
  }
  if (path !== undefined) {
    throw new UserFacingError(
      `${what} at ${redact(url)} does not answer (${first.reason}).\n` +
        `  npm run up starts a local ${what} on a TCP port only: start it on that socket yourself, or change ${setting}.`,
    );
  }
  if (!isLocalHost(host)) {
    throw new UserFacingError(
      `${what} at ${redact(url)} does not answer (${first.reason}).\n` +
        `  It is not on this machine, so npm run up cannot start it: start it there, or change ${setting}.`,
    );
  }
  warn(`${what} does not answer (${first.reason}); starting it on port ${port}…`);
  const started = await start(ROOT, port);
  await waitUntilUp(() => probe(url), what);
  const log = started.logFile ? `log: ${relative(ROOT, started.logFile)}; ` : '';
  ok(`${what} started (${log}it keeps running after the stack stops; stop it with: ${started.stopHint})`);
}

async function ensureServices(settings) {
  await ensureService({
    what: 'Redis',
    setting: 'REDIS_URL',
    url: settings.REDIS_URL,
    defaultPort: 6379,
    probe: pingRedis,
    start: startRedis,
    refusedHint: 'Check the password in REDIS_URL (redis://:PASSWORD@host:port).',
  });
  await ensureService({
    what: 'PostgreSQL',
    setting: 'DATABASE_URL',
    url: settings.DATABASE_URL,
    defaultPort: 5432,
    probe: probePostgres,
    start: startPostgres,
    refusedHint:
      'Put the role and password in DATABASE_URL (postgres://USER:PASSWORD@host:5432/qunli), or allow the\n' +
      '  connection: trust for 127.0.0.1 in pg_hba.conf (Debian), or `createuser -s postgres` (Homebrew).',
  });
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Build and migrate

const appEntry = (name) => join(ROOT, 'dist', 'apps', name, 'src', 'main.js');
const toolEntry = (name) => join(ROOT, 'dist', 'tools', name, 'main.js');

async function buildStack(options) {
  if (options.build) {
    step('building (npm run build)…');
    await build(ROOT);
    ok('built');
  } else {
    const stale = staleReason(ROOT);
    if (stale === undefined) step('skipping the build (--no-build)');
    else warn(`skipping the build (--no-build) although ${stale}`);
  }
  const missing = [...APPS.map((app) => appEntry(app.name)), toolEntry('migrate')].filter((path) => !existsSync(path));
  if (missing.length > 0) {
    const list = missing.map((path) => relative(ROOT, path)).join(', ');
    throw new UserFacingError(
      options.build
        ? `the build did not produce ${list}: those apps or tools are not in this checkout.`
        : `dist/ lacks ${list}; run npm run up without --no-build.`,
    );
  }
}

async function migrate(env) {
  step('running migrations (creates the database when it is missing)…');
  await run(process.execPath, [toolEntry('migrate')], { cwd: ROOT, env });
  ok('database migrated');
}

// ---------------------------------------------------------------------------------------------------------------
// 4. The stack

/** What runs, with which environment; settings the person gave are never overridden. */
function planStack(settings, options) {
  const env = { ...process.env };
  if (settings.QUNLI_SELF_ID === undefined) env.QUNLI_SELF_ID = DEMO_SELF_ID;
  const selfId = env.QUNLI_SELF_ID ?? settings.QUNLI_SELF_ID;
  const ownOneBot = settings.ONEBOT_HTTP_API_URL !== undefined;
  if (!ownOneBot) env.ONEBOT_HTTP_API_URL = `http://127.0.0.1:${SIMULATOR_PORT}`;
  const oneBotApi = env.ONEBOT_HTTP_API_URL ?? settings.ONEBOT_HTTP_API_URL;

  let simulator = options.simulator && !ownOneBot;
  if (simulator && !existsSync(toolEntry('simulator'))) {
    warn('the chat simulator is not in this checkout (no dist/tools/simulator/main.js); starting without it.');
    simulator = false;
  }
  if (!simulator && !ownOneBot) {
    warn(
      `outbound sends to ${oneBotApi}, where nothing listens unless you start the simulator yourself ` +
        `(npm run simulator -- --port ${SIMULATOR_PORT}) or set ONEBOT_HTTP_API_URL to your OneBot implementation.`,
    );
  }

  const apps = APPS.map((app) => ({ ...app, port: portOf(settings, app) }));
  const host = reachableHost(settings.QUNLI_HTTP_HOST);
  // `exec` lets the app replace the shell concurrently starts it in, so the stop signal reaches the app itself.
  const node = `${process.platform === 'win32' ? '' : 'exec '}${shellQuote(process.execPath)}`;
  const processes = apps.map((app) => ({
    name: app.name,
    command: [node, ...(app.nodeFlags ?? []).map(shellQuote), shellQuote(relative(ROOT, appEntry(app.name)))].join(' '),
    env,
    cwd: ROOT,
  }));
  if (simulator) {
    const ingress = `http://${host}:${apps[0].port}`;
    processes.push({
      name: 'simulator',
      command: `${node} ${shellQuote(relative(ROOT, toolEntry('simulator')))} --port ${SIMULATOR_PORT} --ingress ${ingress}`,
      env,
      cwd: ROOT,
    });
  }
  return { env, apps, processes, simulator, selfId, oneBotApi, host, bindHost: settings.QUNLI_HTTP_HOST, settings };
}

/** Where this machine reaches the apps: loopback when they listen on every interface. */
function reachableHost(bindHost) {
  if (['0.0.0.0', '::', ''].includes(bindHost)) return '127.0.0.1';
  return bindHost.includes(':') ? `[${bindHost}]` : bindHost;
}

function shellQuote(text) {
  return /^[\w./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function portIsFree(port, host) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

async function ensurePortsFree(plan) {
  const wanted = plan.apps.map((app) => ({ name: app.name, port: app.port, host: plan.bindHost }));
  if (plan.simulator) wanted.push({ name: 'simulator', port: SIMULATOR_PORT, host: '127.0.0.1' });
  const taken = [];
  for (const entry of wanted) if (!(await portIsFree(entry.port, entry.host))) taken.push(entry);
  if (taken.length > 0) {
    const list = taken.map((entry) => `${entry.port} (${entry.name})`).join(', ');
    throw new UserFacingError(
      `port ${list} already in use. Is another npm run up still running? Stop it, or set the *_PORT settings.`,
    );
  }
}

function describeLlm(settings) {
  if (settings.OPENAI_API_KEY === undefined) {
    warn(
      bold('No OPENAI_API_KEY: cognition uses the offline responder') +
        ' (deterministic replies that say they are offline).\n' +
        '       Set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible API) for real replies.',
    );
    return 'offline responder (no OPENAI_API_KEY)';
  }
  return settings.OPENAI_BASE_URL ?? 'the OpenAI API';
}

/** `unhealthy`: app or simulator name → what its health check last got ("HTTP 503", "no answer"). */
function printWhereToLook(plan, llm, unhealthy) {
  const pad = (label) => `  ${label.padEnd(16)}`;
  const local = (port, path) => `http://${plan.host}:${port}${path}`;
  const ingressPort = plan.apps[0].port;
  const headline =
    unhealthy.size === 0
      ? bold('qunli is up: every app answers /health.')
      : yellow(
          `qunli is running, but ${[...unhealthy.keys()].join(', ')} ${unhealthy.size === 1 ? 'is' : 'are'} ` +
            'not healthy (marked ✗ below); the logs above say why.',
        );
  const status = (name) => (unhealthy.has(name) ? `  ${yellow(`✗ ${unhealthy.get(name)}`)}` : '');
  const lines = ['', headline, ''];
  if (plan.simulator) {
    const hint = dim(`@${plan.selfId} to talk to the bot`);
    lines.push(`${pad('chat simulator')}${bold(SIMULATOR_PAGE)}  ${hint}${status('simulator')}`);
  } else {
    lines.push(`${pad('OneBot API')}${plan.oneBotApi} ${dim('(outbound sends here)')}`);
  }
  lines.push(
    `${pad('OneBot in')}POST ${local(ingressPort, '/onebot/v11/http')}  ${dim('reverse WS')} ws://${plan.host}:${ingressPort}/onebot/v11/ws`,
  );
  for (const app of plan.apps) {
    lines.push(`${pad(app.name)}${local(app.port, '/health')}  ${local(app.port, '/metrics')}${status(app.name)}`);
  }
  lines.push(
    `${pad('LLM')}${llm}`,
    `${pad('Redis')}${redact(plan.settings.REDIS_URL)}`,
    `${pad('PostgreSQL')}${redact(plan.settings.DATABASE_URL)}`,
    `${pad('stop')}Ctrl-C stops every app (Redis and PostgreSQL keep running)`,
    '',
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function runStack(plan, llm) {
  step(`starting ${plan.processes.map((entry) => entry.name).join(', ')}…`);
  const supervisor = await supervise(plan.processes, { restartTries: 3, restartDelayMs: 2000 });
  let ended = false;
  const finished = supervisor.finished.then((code) => {
    ended = true;
    return code;
  });

  const targets = plan.apps.map((app) => ({ name: app.name, url: `http://${plan.host}:${app.port}/health` }));
  if (plan.simulator) targets.push({ name: 'simulator', url: SIMULATOR_PAGE });
  const unhealthy = await waitForAll(targets, { timeoutMs: HEALTH_TIMEOUT_MS, shouldStop: () => ended });
  if (!ended) printWhereToLook(plan, llm, unhealthy);

  const code = await finished;
  if (code !== 0) warn('every process has stopped; their logs above say why.');
  return code;
}

await runMain(async () => {
  const options = parseOptions(process.argv.slice(2));
  await ensureDependencies();
  const settings = await readSettings(ROOT);
  await ensureServices(settings);
  await buildStack(options);
  const plan = planStack(settings, options);
  await ensurePortsFree(plan);
  await migrate(plan.env);
  const llm = describeLlm(settings);
  process.exit(await runStack(plan, llm));
});
