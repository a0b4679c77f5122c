import { DataSource, QueryFailedError } from 'typeorm';
import { ConsumerGroup, Keyspace, type EventEnvelope } from '@app/contracts';
import type { BatchEntry } from '@app/event-bus';
import { Metrics, QunliConfig } from '@app/platform';
import { createTestDatabase, type TestDatabase } from '@app/testing';
import { dataSourceOptions } from '../data-source.js';
import { chain, SELF_ID } from './chain.fixture.js';
import { ProjectionRepository } from './projection.repository.js';
import { ProjectorService } from './read-models.projector.js';

const TABLES = [
  'event_log',
  'messages',
  'events',
  'event_transitions',
  'episodes',
  'episode_steps',
  'sends',
  'projection_checkpoints',
];

/** Stream entries as the bus hands them over: one partition, increasing entry ids. */
function entries(events: EventEnvelope[], partition = 0, firstMs = 1_800_000_000_000): BatchEntry[] {
  return events.map((event, i) => ({ partition, entryId: `${firstMs + i}-0`, event, deliveries: 1 }));
}

describe('the projector on real Postgres', () => {
  let database: TestDatabase;
  let db: DataSource;
  let metrics: Metrics;
  let projector: ProjectorService;

  async function contentHashes(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const table of TABLES) {
      const [row] = await db.query<[{ hash: string }]>(
        `SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS hash FROM ${table} t`,
      );
      out[table] = row.hash;
    }
    return out;
  }

  beforeAll(async () => {
    database = await createTestDatabase('projector');
    db = await new DataSource(dataSourceOptions(database.url)).initialize();
    metrics = new Metrics('test', false);
    projector = new ProjectorService(new ProjectionRepository(db), metrics);
  });

  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('shows a whole message chain in every table', async () => {
    const { message, events, episodeId, actionId } = chain('40001');
    await projector.handleBatch(entries(events));

    const archived = await db.query<
      {
        id: string;
        kind: string;
      }[]
    >('SELECT id, kind, partition, entry_id FROM event_log ORDER BY seq');
    expect(archived.map((r) => r.id)).toEqual(events.map((e) => e.id));

    expect(
      await db.query('SELECT user_id, text, direct, direct_reason, from_self FROM messages ORDER BY sent_at'),
    ).toEqual([
      { user_id: '20001', text: '@小群 今天吃什么？', direct: true, direct_reason: 'at', from_self: false },
      { user_id: SELF_ID, text: '火锅！', direct: false, from_self: true, direct_reason: null },
    ]);
    expect(await db.query('SELECT id, state, outcome, reason, episode_id, features FROM events')).toEqual([
      {
        id: message.id,
        state: 'replied',
        outcome: 'deliberate',
        reason: 'reply sent',
        episode_id: episodeId,
        features: { directness: 1, attention: 0.92 },
      },
    ]);
    expect(await db.query<unknown[]>('SELECT seq, from_state, to_state FROM event_transitions ORDER BY seq')).toEqual([
      { seq: 1, from_state: 'captured', to_state: 'classified' },
      { seq: 2, from_state: 'classified', to_state: 'deliberating' },
      { seq: 3, from_state: 'deliberating', to_state: 'replied' },
    ]);
    expect(await db.query('SELECT id, state, outcome, steps, tokens_in, attempt FROM episodes')).toEqual([
      { id: episodeId, state: 'final', outcome: 'replied', steps: 1, tokens_in: 812, attempt: 1 },
    ]);
    expect(await db.query('SELECT idx, thought, action, latency_ms FROM episode_steps')).toEqual([
      {
        idx: 0,
        thought: '她问吃什么，推荐火锅。',
        action: { type: 'reply', args: { text: '火锅！' } },
        latency_ms: 870.5,
      },
    ]);
    expect(await db.query('SELECT action_id, segment, state, text, onebot_message_id FROM sends')).toEqual([
      { action_id: actionId, segment: 0, state: 'sent', text: '火锅！', onebot_message_id: '-1000000' },
    ]);
    expect(
      await db.query('SELECT projector, partition, last_entry_id, events_applied FROM projection_checkpoints'),
    ).toEqual([
      { projector: ConsumerGroup.Projector, partition: 0, last_entry_id: '1800000000007-0', events_applied: '8' },
    ]);
    const counted = await metrics.registry.getSingleMetric('qunli_projection_events_total')!.get();
    expect(counted.values.reduce((sum, v) => sum + v.value, 0)).toBe(8);
  });

  it('changes nothing when the same batch is handed over again', async () => {
    const { events } = chain('40002', Date.UTC(2026, 10, 30, 11));
    await projector.handleBatch(entries(events, 0, 1_800_000_001_000));
    const before = await contentHashes();

    await projector.handleBatch(entries(events, 0, 1_800_000_001_000));
    // A redelivery of older entries mixed into a later read (after a consumer restart) changes nothing either.
    await projector.handleBatch(entries(events.slice(2, 5), 0, 1_800_000_001_002));

    expect(await contentHashes()).toEqual(before);
  });

  it('archives only the new events of a batch that mixes old and new', async () => {
    const first = chain('40003', Date.UTC(2026, 10, 30, 12));
    const second = chain('40003', Date.UTC(2026, 10, 30, 12, 5), 1);
    await projector.handleBatch(entries(first.events, 3, 1_800_000_002_000));
    await projector.handleBatch(entries([...first.events.slice(4), ...second.events], 3, 1_800_000_002_004));

    const [{ count }] = await db.query<[{ count: number }]>(
      `SELECT count(*)::int AS count FROM event_log WHERE group_id = '40003'`,
    );
    expect(count).toBe(16);
    expect(
      await db.query(`SELECT last_entry_id, events_applied FROM projection_checkpoints WHERE partition = 3`),
    ).toEqual([{ last_entry_id: '1800000002015-0', events_applied: '16' }]);
    expect(await db.query(`SELECT count(*)::int AS n FROM messages WHERE group_id = '40003' AND from_self`)).toEqual([
      { n: 2 },
    ]);
  });

  it('never moves a checkpoint back when older entries come again', async () => {
    const { events } = chain('40004', Date.UTC(2026, 10, 30, 13));
    const handed = entries(events, 5, 1_800_000_003_000);
    await projector.handleBatch(handed.slice(0, 6));
    await projector.handleBatch(handed.slice(6));
    await projector.handleBatch(handed.slice(0, 3));
    expect(
      await db.query(`SELECT last_entry_id, last_event_id FROM projection_checkpoints WHERE partition = 5`),
    ).toEqual([{ last_entry_id: '1800000003007-0', last_event_id: events[7]!.id }]);
  });

  it('stores a message with a NUL character instead of dead-lettering it', async () => {
    const { events } = chain('40005', Date.UTC(2026, 10, 30, 14));
    const message = events[0]!;
    const payload = message.payload as { text: string; segments: { type: string; data: Record<string, string> }[] };
    const poisoned = {
      ...message,
      payload: { ...payload, text: 'a\u0000b \\u0000 stays', segments: [{ type: 'text', data: { text: '\u0000' } }] },
    };
    await projector.handleBatch(entries([poisoned], 6, 1_800_000_004_000));
    expect(await db.query('SELECT text, segments FROM messages WHERE event_id = $1', [message.id])).toEqual([
      { text: 'a\ufffdb \\u0000 stays', segments: [{ type: 'text', data: { text: '\ufffd' } }] },
    ]);
    const [{ text }] = await db.query<[{ text: string }]>(
      `SELECT envelope->'payload'->>'text' AS text FROM event_log WHERE id = $1`,
      [message.id],
    );
    expect(text).toBe('a\ufffdb \\u0000 stays');
  });

  it("fills event_log's columns from each envelope and checkpoints every partition of a shared transaction", async () => {
    const a = chain('40006', Date.UTC(2026, 10, 30, 15));
    const b = chain('40007', Date.UTC(2026, 10, 30, 16));
    const persona = a.extra.find((e) => e.groupId === null)!;
    // Partition 9's last entry is not its newest event: the checkpoint keeps the newest time, the last entry id.
    const nine = [...b.events.slice(0, 4).reverse(), persona];
    const handed = [
      ...entries(a.events, 8, 1_800_000_005_000),
      ...entries(nine, 9, 1_800_000_006_000),
      ...entries(b.events.slice(4), 10, 1_800_000_007_000),
    ];
    await projector.handleBatch(handed);

    const archived = await db.query<
      { id: string; kind: string; group_id: string | null; created_at: Date; partition: number; entry_id: string }[]
    >('SELECT id, kind, group_id, created_at, partition, entry_id FROM event_log WHERE id = ANY($1) ORDER BY seq', [
      handed.map((h) => h.event.id),
    ]);
    expect(archived).toEqual(
      handed.map(({ event, partition, entryId }) => ({
        id: event.id,
        kind: event.kind,
        group_id: event.groupId,
        created_at: new Date(event.createdAt),
        partition,
        entry_id: entryId,
      })),
    );
    expect(archived.find((r) => r.id === persona.id)?.group_id).toBeNull();

    const newest = (events: EventEnvelope[]) => new Date(Math.max(...events.map((e) => Date.parse(e.createdAt))));
    expect(
      await db.query(
        `SELECT partition, last_entry_id, last_event_id, events_applied, updated_at FROM projection_checkpoints
          WHERE partition IN (8, 9, 10) ORDER BY partition`,
      ),
    ).toEqual([
      {
        partition: 8,
        last_entry_id: '1800000005007-0',
        last_event_id: a.events[7]!.id,
        events_applied: '8',
        updated_at: newest(a.events),
      },
      {
        partition: 9,
        last_entry_id: '1800000006004-0',
        last_event_id: persona.id,
        events_applied: '5',
        updated_at: newest(nine),
      },
      {
        partition: 10,
        last_entry_id: '1800000007003-0',
        last_event_id: b.events[7]!.id,
        events_applied: '4',
        updated_at: newest(b.events.slice(4)),
      },
    ]);
  });

  it('prepares its statements by name once per connection and plans each once (ADR 0053)', async () => {
    // One pooled connection, so the statements this test prepares are the ones its session lists.
    const single = await new DataSource(dataSourceOptions(database.url, { poolSize: 1 })).initialize();
    try {
      const repository = new ProjectionRepository(single);
      for (let i = 0; i < 8; i++) {
        const { events } = chain(String(41_000 + i), Date.UTC(2026, 11, 2) + i * 60_000, 100 + i);
        await repository.project('prepared', entries(events, 3, 1_800_000_200_000 + i * 100));
      }
      const prepared = await single.query<{ name: string; statement: string; generic_plans: string }[]>(
        `SELECT name, statement, generic_plans FROM pg_prepared_statements WHERE name LIKE 'qunli\\_%'`,
      );
      const archive = prepared.find((p) => p.statement.includes('INSERT INTO event_log'));
      const checkpoint = prepared.find((p) => p.statement.includes('INSERT INTO projection_checkpoints'));
      const upserts = prepared.filter((p) => p.statement.includes('SELECT * FROM unnest('));
      // Run eight times on one connection: the first five with plans of their own, then one generic plan.
      expect(Number(archive?.generic_plans)).toBeGreaterThan(0);
      expect(Number(checkpoint?.generic_plans)).toBeGreaterThan(0);
      expect(upserts.length).toBeGreaterThanOrEqual(5);
      expect(new Set(prepared.map((p) => p.name)).size).toBe(prepared.length);
      const [{ count }] = await single.query<[{ count: number }]>(
        `SELECT count(*)::int AS count FROM messages WHERE group_id LIKE '4100_'`,
      );
      expect(count).toBe(16);
    } finally {
      await single.destroy();
    }
  });

  it('sends its statements unnamed when QUNLI_DB_PREPARED_STATEMENTS is false (a pooler that does not track them)', async () => {
    const single = await new DataSource(dataSourceOptions(database.url, { poolSize: 1 })).initialize();
    try {
      const config = Object.assign(new QunliConfig(), { QUNLI_DB_PREPARED_STATEMENTS: 'false' as const });
      const repository = new ProjectionRepository(single, config);
      const { events } = chain('41901', Date.UTC(2026, 11, 2, 5), 190);
      await repository.project('unnamed', entries(events, 5, 1_800_000_250_000));
      expect(await single.query(`SELECT name FROM pg_prepared_statements`)).toEqual([]);
      expect(await single.query(`SELECT count(*)::int AS n FROM event_log WHERE group_id = '41901'`)).toEqual([
        { n: events.length },
      ]);
    } finally {
      await single.destroy();
    }
  });

  it('rolls a failing batch back and projects the next one on the same prepared connection', async () => {
    const single = await new DataSource(dataSourceOptions(database.url, { poolSize: 1 })).initialize();
    try {
      const repository = new ProjectionRepository(single);
      const first = chain('42001', Date.UTC(2026, 11, 3), 200);
      await repository.project('failing', entries(first.events, 4, 1_800_000_300_000));
      const broken = chain('42002', Date.UTC(2026, 11, 3, 1), 201);
      // An envelope whose creation time Postgres cannot read fails the archive statement, already prepared.
      const unreadable = { ...broken.events[0]!, createdAt: 'not a time' };
      await expect(
        repository.project('failing', entries([unreadable, ...broken.events.slice(1)], 4, 1_800_000_301_000)),
      ).rejects.toBeInstanceOf(QueryFailedError);
      expect(await single.query(`SELECT count(*)::int AS n FROM event_log WHERE group_id = '42002'`)).toEqual([
        { n: 0 },
      ]);

      const after = chain('42003', Date.UTC(2026, 11, 3, 2), 202);
      await repository.project('failing', entries(after.events, 4, 1_800_000_302_000));
      expect(await single.query(`SELECT count(*)::int AS n FROM event_log WHERE group_id = '42003'`)).toEqual([
        { n: after.events.length },
      ]);
    } finally {
      await single.destroy();
    }
  });

  it('projects 20k events (throughput printed, not asserted)', async () => {
    const keys = new Keyspace('bench', 16);
    const groups = Array.from({ length: 200 }, (_, g) => String(500_000 + g)).filter((g) => keys.partitionOf(g) === 7);
    const events: EventEnvelope[] = [];
    for (let i = 0; events.length < 20_000; i++) {
      events.push(...chain(groups[i % groups.length], Date.UTC(2026, 11, 1) + i * 2000, i).events);
    }
    const handed = entries(events, 7, 1_800_000_100_000);

    let started = performance.now();
    await projector.handleBatch(handed.slice(0, 10_000));
    const oneBatchMs = performance.now() - started;

    started = performance.now();
    for (let i = 10_000; i < handed.length; i += 1000) await projector.handleBatch(handed.slice(i, i + 1000));
    const batchesMs = performance.now() - started;

    process.stdout.write(
      `projector throughput: ${Math.round(10_000 / (oneBatchMs / 1000))} events/s as one batch of 10000, ` +
        `${Math.round((handed.length - 10_000) / (batchesMs / 1000))} events/s in batches of 1000\n`,
    );
    const [{ count }] = await db.query<[{ count: number }]>(
      `SELECT count(*)::int AS count FROM messages WHERE group_id = ANY($1)`,
      [groups],
    );
    expect(count).toBe((events.length / 8) * 2);
  }, 120_000);
});
