import { DataSource } from 'typeorm';
import type { EventEnvelope } from '@app/contracts';
import type { BatchEntry } from '@app/event-bus';
import { Metrics } from '@app/platform';
import { createTestDatabase, type TestDatabase } from '@app/testing';
import { dataSourceOptions } from './data-source.js';
import { carryFacts, chain, schedulerChain } from './projection/chain.fixture.js';
import { edgeEvents } from './projection/edge.fixture.js';
import { keywordEvents } from './projection/keyword.fixture.js';
import { ProjectionRepository } from './projection/projection.repository.js';
import { ProjectorService } from './projection/read-models.projector.js';
import { formatReplayReport, replay } from './replay.js';

const READ_MODELS = [
  'messages',
  'events',
  'event_transitions',
  'episodes',
  'episode_steps',
  'sends',
  'timers',
  'episode_controls',
  'notices',
  'requests',
];
/** Read models of cognition's accounting (issue 8). */
const COGNITION = ['llm_calls', 'personas'];
/** Read models of the life line and memory (issue 9): the message chains fill only `memory_messages`. */
const LIFE_AND_MEMORY = ['agenda', 'activities', 'beats', 'agenda_milestones'];
const MEMORY = ['memory_messages', 'memory_summaries', 'memory_facts', 'memory_jargon'];
/** Read models of attention (issue 7). */
const ATTENTION = ['threads', 'group_actors'];
/** Read models of the keyword lexicon (issue 7). */
const KEYWORDS = ['keyword_sets', 'keyword_terms', 'keyword_hits'];
const ALL_READ_MODELS = [...READ_MODELS, ...LIFE_AND_MEMORY, ...MEMORY, ...COGNITION, ...ATTENTION, ...KEYWORDS];

describe('replay on real Postgres', () => {
  let database: TestDatabase;
  let db: DataSource;
  let total = 0;

  async function replaySchemas(): Promise<string[]> {
    const rows = await db.query<{ schema_name: string }[]>(
      `SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'replay\\_%' ORDER BY 1`,
    );
    return rows.map((r) => r.schema_name);
  }

  beforeAll(async () => {
    database = await createTestDatabase('replay');
    db = await new DataSource(dataSourceOptions(database.url)).initialize();
    const projector = new ProjectorService(new ProjectionRepository(db), new Metrics('test', false));
    // Several groups in two partitions, handed over in uneven batches with redeliveries, as the bus would.
    const streams = new Map<number, EventEnvelope[]>([
      [1, []],
      [2, []],
    ]);
    for (let i = 0; i < 30; i++) {
      const partition = 1 + (i % 2);
      const group = String(41000 + (i % 6));
      const startMs = Date.UTC(2026, 10, 30, 9) + i * 7000;
      const c = chain(group, startMs, i);
      const log = [...c.events, ...c.extra, ...schedulerChain(group, startMs, i)];
      // Every other chain in the shape the scheduler writes since ADR-0024 (facts inside the move events).
      streams.get(partition)!.push(...(i % 2 === 1 ? carryFacts(log).carried : log));
      const message = c.events[0]!;
      const messageId = (message.payload as { messageId: string }).messageId;
      if (i % 3 === 0) streams.get(partition)!.push(...edgeEvents(group, startMs, message.id, messageId));
      if (i % 4 === 0) streams.get(partition)!.push(...keywordEvents(group, startMs, i));
    }
    for (const [partition, events] of streams) {
      const entries: BatchEntry[] = events.map((event, i) => ({
        partition,
        entryId: `${1_800_000_000_000 + i}-0`,
        event,
        deliveries: 1,
      }));
      for (let i = 0, size = 1; i < entries.length; i += size, size = (size % 13) + 3) {
        await projector.handleBatch(entries.slice(Math.max(0, i - 2), i + size));
      }
      total += events.length;
    }
    // Hundreds of small projector transactions: seconds when the machine is shared.
  }, 60_000);

  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('rebuilds every read model equal to the live one, and leaves nothing behind', async () => {
    const report = await replay(db, { batchSize: 37 });
    expect(report.events).toBe(total);
    // Every read model is compared (the order is the data source's, which grows with each issue).
    expect(Object.keys(report.tables).sort()).toEqual([...ALL_READ_MODELS].sort());
    for (const name of ALL_READ_MODELS) {
      expect({ name, ...report.tables[name] }).toMatchObject({ name, equal: true, rows: expect.any(Number) });
    }
    for (const name of [...READ_MODELS, ...COGNITION, ...ATTENTION, ...KEYWORDS, 'memory_messages'])
      expect(report.tables[name]!.rows).toBeGreaterThan(0);
    expect(report.equal).toBe(true);
    expect(await replaySchemas()).toEqual([]);
    expect(formatReplayReport(report)).toContain('read models equal');
  });

  it('reports the table that differs after a live row was tampered with', async () => {
    await db.query(`UPDATE messages SET text = 'edited by hand' WHERE event_id = (SELECT min(event_id) FROM messages)`);
    const report = await replay(db);
    expect(report.equal).toBe(false);
    expect(Object.fromEntries(Object.entries(report.tables).map(([name, t]) => [name, t.equal]))).toEqual(
      Object.fromEntries(ALL_READ_MODELS.map((name) => [name, name !== 'messages'])),
    );
    expect(report.tables.messages!.rows).toBe(report.tables.messages!.liveRows);
    expect(formatReplayReport(report)).toContain('read models DIFFER: messages does not match the log');
  });

  it('notices a row the log never produced', async () => {
    await db.query(`INSERT INTO sends (action_id, segment, state) VALUES ('act_from_nowhere', 0, 'sent')`);
    const report = await replay(db);
    expect(report.tables.sends).toMatchObject({ equal: false });
    expect(report.tables.sends!.liveRows).toBe(report.tables.sends!.rows + 1);
  });

  it('keeps the rebuilt tables when asked, for a person to inspect', async () => {
    const report = await replay(db, { keep: true });
    expect(report.kept).toBe(true);
    expect(await replaySchemas()).toEqual([report.schema]);
    const [{ n }] = await db.query<[{ n: number }]>(`SELECT count(*)::int AS n FROM ${report.schema}.events`);
    expect(n).toBe(report.tables.events!.rows);
    await db.query(`DROP SCHEMA ${report.schema} CASCADE`);
  });
});
