import 'reflect-metadata';
import { QunliError } from '@app/contracts';
import { dataSourceOptions, openDataSource } from '@app/persistence';
import { ConfigError, loadConfig } from '@app/platform';
import { formatWhy, whyOf } from './why.js';

/**
 * `npm run why -- <message id | event id> [--json]`: the scheduler's decision about one message — its outcome,
 * reason, feature vector, keyword hits, thread and every state transition — from the Postgres read models.
 * Exit 0 when found, 1 when nothing is known about the id, 2 when the query could not run.
 */
const USAGE = 'usage: npm run why -- <message id | event id> [--json]';

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const ids = argv.filter((a) => a !== '--json');
  if (ids.length !== 1 || ids[0]!.startsWith('-')) {
    process.stderr.write(`${USAGE}\n`);
    return 64;
  }
  const config = loadConfig('tool');
  const db = await openDataSource(dataSourceOptions(config.DATABASE_URL, { applicationName: 'qunli-why' }));
  try {
    const report = await whyOf(db, ids[0]!);
    if (!report) {
      process.stderr.write(`nothing is known about ${ids[0]} (not a message id, event id or decision id)\n`);
      return 1;
    }
    process.stdout.write(`${formatWhy(report)}\n`);
    if (json) process.stdout.write(`${JSON.stringify(report)}\n`);
    return 0;
  } finally {
    await db.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message =
      error instanceof QunliError || error instanceof ConfigError ? error.message : (error as Error).stack;
    process.stderr.write(`why failed: ${message}\n`);
    process.exit(2);
  },
);
