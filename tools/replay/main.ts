import 'reflect-metadata';
import { QunliError } from '@app/contracts';
import { dataSourceOptions, formatReplayReport, openDataSource, replay } from '@app/persistence';
import { ConfigError, loadConfig } from '@app/platform';

/**
 * `npm run replay [-- --json] [-- --keep]`: rebuild every read model from `event_log` into a scratch schema and
 * compare it with the live tables. Exit 0 when they are equal, 1 when any differs, 2 when replay could not run.
 * With `--json` the last line is one JSON object; `--keep` leaves the rebuilt tables in place for inspection.
 */
const USAGE = 'usage: npm run replay -- [--json] [--keep]';

async function main(argv: string[]): Promise<number> {
  const unknown = argv.filter((arg) => arg !== '--json' && arg !== '--keep');
  if (unknown.length > 0) {
    process.stderr.write(`unknown argument ${unknown.join(' ')}\n${USAGE}\n`);
    return 64;
  }
  const config = loadConfig('tool');
  const dataSource = await openDataSource(dataSourceOptions(config.DATABASE_URL, { applicationName: 'qunli-replay' }));
  try {
    const report = await replay(dataSource, { keep: argv.includes('--keep') });
    process.stdout.write(`${formatReplayReport(report)}\n`);
    if (argv.includes('--json')) {
      const { tables, equal, events } = report;
      process.stdout.write(`${JSON.stringify({ tables, equal, events, schema: report.schema, kept: report.kept })}\n`);
    }
    return report.equal ? 0 : 1;
  } finally {
    await dataSource.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message =
      error instanceof QunliError || error instanceof ConfigError ? error.message : (error as Error).stack;
    process.stderr.write(`replay failed: ${message}\n`);
    process.exit(2);
  },
);
