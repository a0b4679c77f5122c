import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { Keyspace, QunliError } from '@app/contracts';
import { EventBusModule, EventLog } from '@app/event-bus';
import { Clock, ConfigError, PlatformModule, REDIS } from '@app/platform';
import { KeywordLexiconStore } from '../../apps/scheduler/src/keywords/keyword-lexicon.store.js';
import { keywordCommandEvent } from '../../apps/scheduler/src/keywords/keyword-command.js';
import { setKeyOf, termIdOf, termText, type LexiconTerm } from '../../apps/scheduler/src/keywords/lexicon.rules.js';
import { parseKeywordArgs, USAGE, type KeywordCli } from './keyword-args.js';

/**
 * `npm run keywords -- pin 原神 --scope group:123456`: a person's command on the keyword lexicon (the panel will send
 * the same event). It appends `keyword.control.requested` to the log; the scheduler's keywords consumer applies
 * it (in the log order of the set's group) and publishes the set's next version. The tool waits a few seconds for
 * that and prints the term as it is then. `list` prints a set's terms. Errors are printed with their code
 * (`--json`: as JSON on stderr) and exit 64 for bad arguments.
 */

/** How long to wait for a running scheduler to apply the command (real ms). */
const WAIT_MS = 10_000;

@Module({ imports: [PlatformModule.forApp('tool'), EventBusModule.forRoot()], providers: [KeywordLexiconStore] })
class KeywordsToolModule {}

function show(term: LexiconTerm): string {
  const aliases = term.aliases.length > 0 ? ` (${term.aliases.join(', ')})` : '';
  return `${term.text}${aliases}  ${term.status}  weight ${term.weight}  ${term.source}  seen ${term.sightings}×`;
}

async function run(cli: KeywordCli): Promise<number> {
  const app = await NestFactory.createApplicationContext(KeywordsToolModule, { logger: ['error', 'warn'] });
  try {
    const store = app.get(KeywordLexiconStore);
    const setKey = setKeyOf(cli.ref);
    if (cli.action === 'list') {
      const terms = [...((await store.loadSets([setKey])).get(setKey)?.terms.values() ?? [])].sort(
        (a, b) => b.weight - a.weight,
      );
      if (cli.json) process.stdout.write(`${JSON.stringify({ set: setKey, terms })}\n`);
      else process.stdout.write(`${setKey}: ${terms.length} terms\n${terms.map((t) => `  ${show(t)}\n`).join('')}`);
      return 0;
    }
    const event = keywordCommandEvent(cli.ref, cli.payload, 'cli', app.get(Clock).now());
    await app.get(EventLog).append(event);
    const redis = app.get<Redis>(REDIS);
    const keys = app.get(Keyspace);
    const deadline = Date.now() + WAIT_MS;
    let applied = false;
    while (!applied && Date.now() < deadline) {
      applied = (await redis.exists(keys.keywordDone(event.id))) === 1;
      if (!applied) await sleep(200);
    }
    const term = applied
      ? (await store.loadSets([setKey])).get(setKey)?.terms.get(termIdOf(cli.ref, termText(cli.payload.term)))
      : undefined;
    const result = { eventId: event.id, set: setKey, command: cli.payload.command, applied, term: term ?? null };
    if (cli.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else if (!applied) {
      process.stdout.write(`${cli.payload.command} requested (${event.id}); no scheduler applied it within 10 s\n`);
    } else process.stdout.write(`${cli.payload.command} applied in ${setKey}: ${term ? show(term) : 'removed'}\n`);
    return 0;
  } finally {
    await app.close();
  }
}

function fail(error: unknown, json: boolean): number {
  if (error instanceof QunliError) {
    process.stderr.write(json ? `${JSON.stringify(error.toJSON())}\n` : `${error.code}: ${error.message}\n${USAGE}\n`);
    return error.code.startsWith('KEYWORD.') ? 64 : 2;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    return 78;
  }
  process.stderr.write(`${String((error as Error).stack ?? error)}\n`);
  return 2;
}

const argv = process.argv.slice(2);
const json = argv.includes('--json');
let cli: KeywordCli | undefined;
try {
  cli = parseKeywordArgs(argv);
} catch (error) {
  process.exit(fail(error, json));
}
run(cli).then(
  (code) => process.exit(code),
  (error: unknown) => process.exit(fail(error, json)),
);
