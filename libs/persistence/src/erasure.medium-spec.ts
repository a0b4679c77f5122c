import { DataSource } from 'typeorm';
import type { EventEnvelope } from '@app/contracts';
import { Metrics } from '@app/platform';
import { createTestDatabase, type TestDatabase } from '@app/testing';
import { dataSourceOptions } from './data-source.js';
import { eraseEvents } from './erasure.js';
import { carryFacts, chain, schedulerChain } from './projection/chain.fixture.js';
import { ProjectionRepository } from './projection/projection.repository.js';
import { ProjectorService } from './projection/read-models.projector.js';

/** Tables a person's thread snapshots and the actor feed, and the decisions' tables they must not take along. */
const TABLES = ['threads', 'group_actors', 'events', 'event_transitions', 'timers', 'messages'];

async function tables(db: DataSource): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of TABLES) out[table] = await db.query(`SELECT * FROM ${table} ORDER BY 1, 2`);
  return out;
}

describe('forgetting a person whose thread snapshots ride in decisions (ADR-0024)', () => {
  const databases: TestDatabase[] = [];
  const sources: DataSource[] = [];

  async function projected(name: string, events: EventEnvelope[]): Promise<DataSource> {
    const database = await createTestDatabase(name);
    databases.push(database);
    const db = await new DataSource(dataSourceOptions(database.url)).initialize();
    sources.push(db);
    const projector = new ProjectorService(new ProjectionRepository(db), new Metrics('test', false));
    await projector.handleBatch(
      events.map((event, i) => ({ partition: 1, entryId: `${1_800_000_000_000 + i}-0`, event, deliveries: 1 })),
    );
    return db;
  }

  afterAll(async () => {
    for (const db of sources) await db.destroy();
    for (const database of databases) await database.drop();
  });

  it('leaves the same tables as with standalone facts, and keeps the decision that carried them', async () => {
    // The chain's sender is 20001; the thread snapshots and the actor name 40002 (schedulerChain's attention facts).
    const c = chain('30021');
    const sc = schedulerChain('30021');
    const log = [c.events[0]!, c.events[1]!, sc[0]!, sc[1]!, sc[2]!, ...c.events.slice(2), ...sc.slice(3)];
    const { carried, standalone } = carryFacts(log);
    const [older, newer] = await Promise.all([projected('erasure-a', standalone), projected('erasure-b', carried)]);
    expect(await tables(newer)).toEqual(await tables(older));
    expect((await tables(newer)).threads).toHaveLength(1);

    const [a, b] = await Promise.all([
      eraseEvents(older, { kind: 'user', userId: '40002' }),
      eraseEvents(newer, { kind: 'user', userId: '40002' }),
    ]);
    expect(a.events.length).toBeGreaterThan(0);
    expect(b.events).toEqual([]);
    const after = await tables(newer);
    expect(after).toEqual(await tables(older));
    expect(after.threads).toEqual([]);
    expect(after.group_actors).toEqual([]);
    expect(after.events).toHaveLength(1);
    const left = await newer.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM event_log WHERE envelope::text LIKE '%"40002"%'`,
    );
    expect(left[0]!.n).toBe(0);
    // Forgetting the same person again changes nothing.
    await eraseEvents(newer, { kind: 'user', userId: '40002' });
    expect(await tables(newer)).toEqual(after);
  }, 60_000);
});
