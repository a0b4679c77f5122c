import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { EventEnvelope } from '@app/contracts';
import { READ_MODEL_ENTITIES } from './data-source.js';
import { quoteIdent } from './migrator.js';
import { ProjectionRepository } from './projection/projection.repository.js';
import { READ_MODELS, type LoggedEvent } from './projection/projection.rules.js';

export interface ReplayOptions {
  /** Keep the rebuilt tables (schema `replay_…`) instead of dropping them. */
  keep?: boolean;
  /** Events folded per write. */
  batchSize?: number;
  /** Schema holding the live tables. */
  liveSchema?: string;
}

export interface TableComparison {
  /** md5 over the table's rows in primary-key order. */
  live: string;
  replay: string;
  equal: boolean;
  /** Rows in the rebuilt table. */
  rows: number;
  liveRows: number;
}

export interface ReplayReport {
  tables: Record<string, TableComparison>;
  equal: boolean;
  events: number;
  /** The scratch schema; still there only when `kept`. */
  schema: string;
  kept: boolean;
}

const DEFAULT_BATCH = 5000;

/**
 * Rebuild every read model from `event_log` and compare it with the live one.
 *
 * Runs in one REPEATABLE READ transaction, so the archive and the live tables are read at one instant (the
 * projector writes both in one transaction, so they agree at every instant). The tables are rebuilt in a fresh
 * schema by the projector's own fold and writer, in `seq` order; each table is then hashed on both sides. Without
 * `keep` the transaction is rolled back, which removes the scratch schema whatever happened.
 */
export async function replay(dataSource: DataSource, options: ReplayOptions = {}): Promise<ReplayReport> {
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  const live = options.liveSchema ?? 'public';
  const schema = `replay_${randomBytes(6).toString('hex')}`;
  const repository = new ProjectionRepository(dataSource);
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  let kept = false;
  try {
    await runner.startTransaction('REPEATABLE READ');
    const db = runner.manager;
    const tables = READ_MODELS.map((model) => {
      const metadata = dataSource.getMetadata(READ_MODEL_ENTITIES[model]);
      return { name: metadata.tableName, key: metadata.primaryColumns.map((c) => c.databaseName) };
    });
    await db.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    for (const { name } of tables) {
      await db.query(
        `CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(name)} (LIKE ${quoteIdent(live)}.${quoteIdent(name)} INCLUDING ALL)`,
      );
      await copyTriggers(db, live, schema, name);
    }
    // The writer names tables unqualified: they resolve to the scratch schema, `event_log` to the live one.
    await db.query(`SELECT set_config('search_path', $1, true)`, [`${quoteIdent(schema)}, ${quoteIdent(live)}`]);
    const events = await foldArchive(db, repository, live, batchSize);

    const report: ReplayReport = { tables: {}, equal: true, events, schema, kept: false };
    for (const { name, key } of tables) {
      const before = await tableHash(db, live, name, key);
      const after = await tableHash(db, schema, name, key);
      const equal = before.hash === after.hash && before.rows === after.rows;
      report.tables[name] = { live: before.hash, replay: after.hash, equal, rows: after.rows, liveRows: before.rows };
      report.equal &&= equal;
    }
    if (options.keep) {
      await runner.commitTransaction();
      kept = true;
    }
    return { ...report, kept };
  } finally {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    await runner.release();
  }
}

async function foldArchive(
  db: EntityManager,
  repository: ProjectionRepository,
  live: string,
  batchSize: number,
): Promise<number> {
  let after = '0';
  let total = 0;
  for (;;) {
    const rows = await db.query<{ seq: string; envelope: EventEnvelope }[]>(
      `SELECT seq, envelope FROM ${quoteIdent(live)}.event_log WHERE seq > $1 ORDER BY seq LIMIT $2`,
      [after, batchSize],
    );
    if (rows.length === 0) return total;
    const batch: LoggedEvent[] = rows.map((row) => ({ seq: Number(row.seq), event: row.envelope }));
    await repository.rebuild(db, batch);
    total += rows.length;
    after = rows[rows.length - 1]!.seq;
  }
}

/**
 * `LIKE … INCLUDING ALL` copies no triggers; a column one fills (`memory_messages.search_vector`, ADR-0049) would
 * stay empty in the scratch table. Each of the live table's own triggers is created again on the scratch one.
 */
async function copyTriggers(db: EntityManager, live: string, schema: string, table: string): Promise<void> {
  // `format('%I.%I')` names the table the way `pg_get_triggerdef` prints it: quoted only where it must be.
  const triggers = await db.query<{ definition: string; source: string; target: string }[]>(
    `SELECT pg_get_triggerdef(t.oid) AS definition, format(' ON %I.%I ', $2::text, $4::text) AS source,
            format(' ON %I.%I ', $3::text, $4::text) AS target
     FROM pg_trigger t
     WHERE t.tgrelid = to_regclass($1) AND NOT t.tgisinternal`,
    [`${quoteIdent(live)}.${quoteIdent(table)}`, live, schema, table],
  );
  for (const { definition, source, target } of triggers) {
    if (!definition.includes(source))
      throw new Error(`replay: cannot copy a trigger of ${live}.${table}: ${definition}`);
    await db.query(definition.replace(source, target));
  }
}

/** md5 of the per-row md5s in primary-key order: every column counts, and memory stays 32 bytes a row. */
async function tableHash(
  db: EntityManager,
  schema: string,
  table: string,
  key: string[],
): Promise<{ hash: string; rows: number }> {
  const order = key.map((column) => `t.${quoteIdent(column)}`).join(', ');
  const [row] = await db.query<[{ rows: number; hash: string }]>(
    `SELECT count(*)::int AS rows, md5(coalesce(string_agg(md5(t::text), '' ORDER BY ${order}), '')) AS hash
     FROM ${quoteIdent(schema)}.${quoteIdent(table)} t`,
  );
  return row;
}

/** The report as a table for people: one line per read model, then the verdict. */
export function formatReplayReport(report: ReplayReport): string {
  const header = ['table', 'live rows', 'replay rows', 'live hash', 'replay hash', ''];
  const lines = Object.entries(report.tables).map(([name, t]) => [
    name,
    String(t.liveRows),
    String(t.rows),
    t.live,
    t.replay,
    t.equal ? 'equal' : 'DIFFERS',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => line[i]!.length)));
  const row = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 1 || i === 2 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const differing = Object.entries(report.tables)
    .filter(([, t]) => !t.equal)
    .map(([name]) => name);
  return [
    `replayed ${report.events} events from event_log into schema ${report.schema}${report.kept ? ' (kept)' : ' (dropped)'}`,
    '',
    row(header),
    ...lines.map(row),
    '',
    report.equal
      ? 'read models equal: the live tables are what the log says'
      : `read models DIFFER: ${differing.join(', ')} ${differing.length === 1 ? 'does' : 'do'} not match the log`,
  ].join('\n');
}
