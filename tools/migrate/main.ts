import 'reflect-metadata';
import { QunliError } from '@app/contracts';
import { databaseNameOf, ensureDatabase, migrate, migrationNames, redact } from '@app/persistence';
import { ConfigError, loadConfig } from '@app/platform';

/**
 * `npm run migrate`: create the database `DATABASE_URL` names when it does not exist, then run the pending
 * migrations. Safe to run at every start and from several processes at once.
 */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

async function main(): Promise<void> {
  const { DATABASE_URL: url } = loadConfig('tool');
  const where = redact(url);
  if (await ensureDatabase(url)) process.stdout.write(`created database ${databaseNameOf(url)} on ${where}\n`);
  const ran = await migrate(url);
  for (const name of ran) process.stdout.write(`ran migration ${name}\n`);
  process.stdout.write(
    ran.length > 0
      ? `database ${where} is up to date (${plural(ran.length, 'migration')} run)\n`
      : `database ${where} was already up to date (${plural(migrationNames().length, 'migration')})\n`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    const message =
      error instanceof QunliError || error instanceof ConfigError ? error.message : (error as Error).stack;
    process.stderr.write(`migrate failed: ${message}\n`);
    process.exit(1);
  },
);
