import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { Keyspace } from '@app/contracts';
import { loadPersona } from '@app/persona';
import { ConfigError, loadConfig } from '@app/platform';
import { startSimulator, type FeedEntry } from './simulator.js';
import { loadTranscript, watchDecisions, watchThinking } from './stack-watch.js';

const USAGE = `usage: node dist/tools/simulator/main.js [--port 8090] [--host 127.0.0.1] [--ingress http://127.0.0.1:8080]
                                         [--report-self]

Runs a NapCat-like OneBot v11 implementation with a chat page. Point the stack's outbound at it
(ONEBOT_HTTP_API_URL=http://127.0.0.1:8090) and open the page to talk to the bot. Reads ONEBOT_ACCESS_TOKEN,
ONEBOT_SECRET, QUNLI_SELF_ID, QUNLI_PERSONA, QUNLI_GROUPS, INGRESS_PORT, REDIS_URL and DATABASE_URL like the apps
do: the bot is named after the persona, the transcript is read back from the log, and the page shows when the bot
is thinking. --report-self also posts the bot's own messages to ingress as message_sent (NapCat reportSelfMessage).`;

function ingressEndpoint(given: string): string {
  const url = new URL(given);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/onebot/v11/http';
  return url.toString();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '8090' },
      host: { type: 'string', default: '127.0.0.1' },
      ingress: { type: 'string' },
      'report-self': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig('tool');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError([`--port must be a port number (got ${values.port})`]);
  const ingressUrl = ingressEndpoint(values.ingress ?? `http://127.0.0.1:${config.INGRESS_PORT}`);
  const groups = config.groups === '*' ? ['30001', '30002'] : [...config.groups];
  const selfId = config.QUNLI_SELF_ID ?? '10001';
  let nickname = config.nicknames[0] ?? '机器人';
  try {
    nickname = loadPersona(config.QUNLI_PERSONA).identity.name;
  } catch (error) {
    process.stderr.write(
      `persona ${config.QUNLI_PERSONA} not readable (${(error as Error).message}); the bot is "${nickname}"\n`,
    );
  }
  let transcript: FeedEntry[] = [];
  try {
    transcript = await loadTranscript(config.DATABASE_URL, selfId);
  } catch (error) {
    process.stderr.write(`no transcript from ${config.DATABASE_URL}: ${(error as Error).message}\n`);
  }
  const simulator = await startSimulator({
    port,
    host: values.host,
    ingressUrl,
    selfId,
    nickname,
    groups,
    transcript,
    offline: config.llmOffline,
    reportSelfMessages: values['report-self'],
    ...(config.ONEBOT_ACCESS_TOKEN !== undefined && { accessToken: config.ONEBOT_ACCESS_TOKEN }),
    ...(config.ONEBOT_SECRET !== undefined && { secret: config.ONEBOT_SECRET }),
  });
  const stopDecisions = watchDecisions(config.DATABASE_URL, (note) => simulator.setDecision(note));
  const stopWatching = watchThinking(
    config.REDIS_URL,
    new Keyspace(config.QUNLI_REDIS_PREFIX, config.QUNLI_PARTITIONS),
    (status) => simulator.setThinking(status),
  );
  process.stdout.write(
    [
      `chat simulator: ${simulator.url}/`,
      `  OneBot HTTP API for outbound: ONEBOT_HTTP_API_URL=${simulator.url}`,
      `  posting events to ingress:    ${ingressUrl}${config.ONEBOT_SECRET ? ' (signed)' : ''}`,
      `  bot: ${nickname} (${config.QUNLI_SELF_ID ?? '10001, QUNLI_SELF_ID not set'})${config.llmOffline ? ' — offline responder' : ''}`,
      '',
    ].join('\n'),
  );
  const shutdown = (): void => {
    Promise.all([stopWatching(), stopDecisions(), simulator.stop()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
