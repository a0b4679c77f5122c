import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { EventBusModule } from '@app/event-bus';
import { MemoryErasure, MemoryStoresModule } from '@app/memory';
import { PersistenceModule } from '@app/persistence';
import { ConfigError, PlatformModule } from '@app/platform';
import { Module } from '@nestjs/common';

/**
 * `npm run forget-user -- <QQ number> [--json]`: erase everything about one person — their messages and what rests
 * on them in the log, every read model (rebuilt from what remains), memory facts, summaries and jargon evidence,
 * and every Redis trace (hot streams, recent windows, thread buffers, job data). Prints what was removed.
 */
const USAGE = 'usage: npm run forget-user -- <QQ number> [--json]';

@Module({
  imports: [PlatformModule.forApp('tool'), PersistenceModule.forRoot(), EventBusModule.forRoot(), MemoryStoresModule],
})
class ForgetUserModule {}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const ids = argv.filter((a) => a !== '--json');
  if (ids.length !== 1 || !/^[0-9]{1,20}$/.test(ids[0]!)) {
    process.stderr.write(`${USAGE}\n`);
    return 64;
  }
  const app = await NestFactory.createApplicationContext(ForgetUserModule, { logger: ['error', 'warn'] });
  try {
    const report = await app.get(MemoryErasure).forgetUser(ids[0]!);
    process.stdout.write(
      `erased ${report.events} events; redis: ${report.redis.streamEntriesDeleted} stream entries, ` +
        `${report.redis.elementsRemoved} elements, ${report.redis.keysDeleted} keys` +
        (report.redis.jobsBusy > 0 ? `; ${report.redis.jobsBusy} running jobs left (run again when idle)` : '') +
        '\n',
    );
    if (json) process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.redis.jobsBusy > 0 ? 75 : 0;
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof ConfigError ? error.message : String((error as Error).stack ?? error)}\n`);
    process.exit(error instanceof ConfigError ? 78 : 2);
  },
);
