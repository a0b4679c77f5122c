import { Global, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { QunliError } from '@app/contracts';
import { QunliConfig } from '@app/platform';
import { testConfig, createTestDatabase, TEST_DATABASE_ADMIN_URL, type TestDatabase } from '@app/testing';
import { dataSourceOptions, MIGRATIONS } from './data-source.js';
import { ensureDatabase, migrate, pendingMigrations, withDatabase } from './migrator.js';
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

async function startApp(databaseUrl: string) {
  const moduleRef = await Test.createTestingModule({
    imports: [configModule(databaseUrl), PersistenceModule.forRoot()],
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
  });

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

  it('refuses to start while a migration is pending, saying what to run', async () => {
    const database = await createTestDatabase('persistence-behind', { empty: true });
    databases.push(database);
    const error = await startFailure(database.url);
    expect(error.code).toBe('DB.SCHEMA_BEHIND');
    expect(error.message).toBe('database schema is behind: run `npm run migrate`');
    expect(error.details).toEqual({ pending: MIGRATIONS.map((m) => m.name) });
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
    expect(await migrate(fresh.url)).toEqual(MIGRATIONS.map((m) => m.name));
    expect(await migrate(fresh.url)).toEqual([]);
    const app = await startApp(fresh.url);
    await app.close();
  });

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
