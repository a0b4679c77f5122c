import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { EventLog } from '@app/event-bus';
import { EventBusModule } from '@app/event-bus';
import { PlatformModule } from '@app/platform';
import { deleteKeys, testConfig, testRedis, uniquePrefix, createTestDatabase, type TestDatabase } from '@app/testing';
import { PersistenceModule } from '../persistence.module.js';
import { chain } from './chain.fixture.js';
import { ProjectorModule } from './projector.module.js';

/** The projector as an app runs it: the real stream consumer feeding Postgres. */
describe('ProjectorModule with the stream consumer', () => {
  let database: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let app: INestApplication;

  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    for (let i = 0; ; i++) {
      const value = await read();
      if (done(value) || i >= 200) return value;
      await sleep(50);
    }
  }

  async function start(settings: Record<string, unknown> = {}): Promise<INestApplication> {
    const config = testConfig('scheduler', {
      DATABASE_URL: database.url,
      QUNLI_REDIS_PREFIX: prefix,
      QUNLI_PARTITIONS: 4,
      QUNLI_LEASE_MS: 1000,
      ...settings,
    });
    @Module({
      imports: [
        PlatformModule.forApp('scheduler', { config, withoutDefaultMetrics: true }),
        PersistenceModule.forRoot(),
        EventBusModule.forRoot(),
        ProjectorModule,
      ],
    })
    class ProjectorApp {}
    const started = await NestFactory.create(ProjectorApp, { logger: ['error', 'warn'] });
    await started.init();
    return started;
  }

  beforeAll(async () => {
    database = await createTestDatabase('projector-module');
    redis = testRedis();
    prefix = uniquePrefix('projector');
    app = await start();
  });

  afterAll(async () => {
    await app?.close();
    await deleteKeys(redis, prefix);
    redis.disconnect();
    await database?.drop();
  });

  it('archives what is appended to the log and projects it', async () => {
    const first = chain('42001');
    const second = chain('42002', Date.UTC(2026, 10, 30, 10, 1), 1);
    const log = app.get(EventLog);
    for (const event of [...first.events, ...second.events]) await log.append(event);

    const db = app.get(DataSource);
    const archived = await until(
      async () => (await db.query<[{ n: number }]>('SELECT count(*)::int AS n FROM event_log'))[0].n,
      (n) => n >= 16,
    );
    expect(archived).toBe(16);
    expect(await db.query('SELECT id, state FROM events ORDER BY id')).toEqual(
      [first.message.id, second.message.id].sort().map((id) => ({ id, state: 'replied' })),
    );
    const checkpoints = await db.query<{ partition: number; events_applied: string }[]>(
      'SELECT partition, events_applied FROM projection_checkpoints ORDER BY partition',
    );
    expect(checkpoints.reduce((sum, c) => sum + Number(c.events_applied), 0)).toBe(16);
  });
  it('reads QUNLI_DB_PREPARED_STATEMENTS from the app config: false sends the statements unnamed', async () => {
    await app.close();
    // One connection, so the projector's session is the one whose prepared statements the test lists.
    app = await start({ QUNLI_DB_PREPARED_STATEMENTS: 'false', QUNLI_DB_POOL_SIZE: 1 });
    const third = chain('42003', Date.UTC(2026, 10, 30, 10, 2), 2);
    const log = app.get(EventLog);
    for (const event of third.events) await log.append(event);
    const db = app.get(DataSource);
    const archived = await until(
      async () =>
        (await db.query<[{ n: number }]>(`SELECT count(*)::int AS n FROM event_log WHERE group_id = '42003'`))[0].n,
      (n) => n >= third.events.length,
    );
    expect(archived).toBe(third.events.length);
    expect(await db.query('SELECT name FROM pg_prepared_statements')).toEqual([]);
  });
});
