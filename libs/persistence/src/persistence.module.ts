import { Global, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { QunliError } from '@app/contracts';
import { APP_NAME, QunliConfig } from '@app/platform';
import { dataSourceOptions, poolExtras, type PostgresOptions } from './data-source.js';
import { openDataSource } from './migrator.js';

/**
 * TypeORM on `DATABASE_URL` for an app: a pool of `QUNLI_DB_POOL_SIZE`, no schema synchronisation, and a start that fails with
 * `DB.SCHEMA_BEHIND` when a migration is pending. An unreachable database is retried (an app may start before
 * Postgres does); a schema problem is not, since waiting will not fix it.
 */
@Global()
@Module({})
export class PersistenceModule {
  /**
   * `keepOpen`: connections the app opens at start and keeps however long it idles (capped at the pool size), for
   * an app whose first queries after a quiet spell are on a reply's path; `'pool'` keeps the whole pool.
   */
  static forRoot(options: { keepOpen?: number | 'pool' } = {}): DynamicModule {
    return {
      module: PersistenceModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [QunliConfig, { token: APP_NAME, optional: true }],
          useFactory: (config: QunliConfig, app: string | undefined) => ({
            ...dataSourceOptions(config.DATABASE_URL, {
              applicationName: `qunli-${app ?? 'app'}`,
              poolSize: config.QUNLI_DB_POOL_SIZE,
              extra: poolExtras(
                Math.min(
                  config.QUNLI_DB_POOL_SIZE,
                  options.keepOpen === 'pool' ? config.QUNLI_DB_POOL_SIZE : (options.keepOpen ?? 0),
                ),
              ),
            }),
            retryAttempts: 10,
            retryDelay: 3000,
            verboseRetryLog: true,
            toRetry: (error: unknown) => !(error instanceof QunliError && error.code !== 'DB.UNREACHABLE'),
          }),
          dataSourceFactory: (options) => openDataSource(options as PostgresOptions),
        }),
      ],
      exports: [TypeOrmModule],
    };
  }
}
