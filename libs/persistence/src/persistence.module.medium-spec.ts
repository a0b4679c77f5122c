import { Global, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { QunliError } from '@app/contracts';
import { QunliConfig } from '@app/platform';
import { testConfig, createTestDatabase, eventually, TEST_DATABASE_ADMIN_URL, type TestDatabase } from '@app/testing';
import { dataSourceOptions, MIGRATIONS, POOL_IDLE_MS } from './data-source.js';

const ALL_MIGRATIONS = MIGRATIONS.map((m) => new m().name);
import { databaseNameOf, ensureDatabase, migrate, pendingMigrations, withDatabase } from './migrator.js';
import { PersistenceModule } from './persistence.module.js';

function configModule(databaseUrl: string) {
  @Global()
  @Module({
    providers: [{ provide: QunliConfig, useValue: testConfig('tool', { DATABASE_URL: databaseUrl }) }],
    exports: [QunliConfig],
  })
  class TestConfigModule {}
  return TestConfigModule;
}

async function startApp(databaseUrl: string, keepOpen?: number | 'pool') {
  const moduleRef = await Test.createTestingModule({
    imports: [configModule(databaseUrl), PersistenceModule.forRoot(keepOpen === undefined ? {} : { keepOpen })],
  }).compile();
  return moduleRef;
}

async function startFailure(databaseUrl: string): Promise<QunliError> {
  try {
    const app = await startApp(databaseUrl);
    await app.close();
  } catch (error) {
    if (error instanceof QunliError) return error;
    throw error;
  }
  throw new Error('the app started');
}

describe('PersistenceModule on real Postgres', () => {
  const databases: TestDatabase[] = [];

  afterAll(async () => {
    for (const database of databases) await database.drop();
  }, 60_000);

  it('starts on a migrated database and hands out the pool', async () => {
    const database = await createTestDatabase('persistence-ok');
    databases.push(database);
    const app = await startApp(database.url);
    const dataSource = app.get(DataSource);
    expect(await pendingMigrations(dataSource)).toEqual([]);
    expect(await dataSource.query('SELECT count(*)::int AS n FROM event_log')).toEqual([{ n: 0 }]);
    await app.close();
    expect(dataSource.isInitialized).toBe(false);
  });

  it('opens the connections it keeps at start (pg keeps `min` however long they idle) and lets others idle 10 min', async () => {
    const database = await createTestDatabase('persistence-warm');
    databases.push(database);
    const admin = new DataSource(dataSourceOptions(TEST_DATABASE_ADMIN_URL, { poolSize: 1 }));
    await admin.initialize();
    const connections = async () =>
      (
        await admin.query<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
          [databaseNameOf(database.url)],
        )
      )[0]!.n;
    try {
      const lazy = await startApp(database.url);
      // Without keepOpen, start opens one connection (the schema check); pg would close it after POOL_IDLE_MS.
      expect(await connections()).toBe(1);
      const lazyPool = (lazy.get(DataSource).driver as unknown as { master: { options: Record<string, unknown> } })
        .master.options;
      expect(lazyPool).toMatchObject({ min: 0, idleTimeoutMillis: POOL_IDLE_MS, keepAlive: true });
      await lazy.close();
      // A closed pool's backends end a moment after their clients hang up.
      const gone = () => eventually('the closed pool to leave Postgres', async () => (await connections()) === 0);
      await gone();

      const warm = await startApp(database.url, 3);
      expect(await connections()).toBe(3);
      const pool = (warm.get(DataSource).driver as unknown as { master: { options: Record<string, unknown> } }).master
        .options;
      expect(pool).toMatchObject({ min: 3, max: 10 });
      await warm.close();
      await gone();

      // 'pool' keeps the whole pool (QUNLI_DB_POOL_SIZE, 10 in the test config).
      const whole = await startApp(database.url, 'pool');
      expect(await connections()).toBe(10);
      await whole.close();
    } finally {
      await admin.destroy();
    }
  });

  it('refuses to start while a migration is pending, saying what to run', async () => {
    const database = await createTestDatabase('persistence-behind', { empty: true });
    databases.push(database);
    const error = await startFailure(database.url);
    expect(error.code).toBe('DB.SCHEMA_BEHIND');
    expect(error.message).toBe('database schema is behind: run `npm run migrate`');
    expect(error.details).toEqual({ pending: ALL_MIGRATIONS });
  });

  it('refuses to start on a database that does not exist, with the same advice', async () => {
    const error = await startFailure(withDatabase(TEST_DATABASE_ADMIN_URL, 'qunli_t_never_created'));
    expect(error.code).toBe('DB.SCHEMA_BEHIND');
    expect(error.details).toMatchObject({ database: 'qunli_t_never_created' });
  });

  it('migrate creates the database, runs what is pending once, and then the app starts', async () => {
    const fresh = await createTestDatabase('persistence-migrate', { empty: true });
    databases.push(fresh);
    await fresh.drop();
    expect(await ensureDatabase(fresh.url)).toBe(true);
    expect(await ensureDatabase(fresh.url)).toBe(false);
    expect(await migrate(fresh.url)).toEqual(ALL_MIGRATIONS);
    expect(await migrate(fresh.url)).toEqual([]);
    const app = await startApp(fresh.url);
    await app.close();
  }, 60_000);

  it('has entities that match the migrated schema exactly', async () => {
    const database = await createTestDatabase('persistence-entities');
    databases.push(database);
    const dataSource = await new DataSource(dataSourceOptions(database.url)).initialize();
    try {
      const changes = await dataSource.driver.createSchemaBuilder().log();
      expect(changes.upQueries.map((q) => q.query)).toEqual([]);
    } finally {
      await dataSource.destroy();
    }
  });
});
