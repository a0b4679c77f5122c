import { Injectable, Optional } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { EventEnvelope } from '@app/contracts';
import type { BatchEntry } from '@app/event-bus';
import { QunliConfig } from '@app/platform';
import { READ_MODEL_ENTITIES } from '../data-source.js';
import { quoteIdent } from '../migrator.js';
import { arrayParameter } from './pg-array.js';
import { preparedQuery } from './prepared-query.js';
import {
  foldEvents,
  READ_MODEL_RULES,
  READ_MODELS,
  rowKey,
  triggersNeeded,
  type FoldContext,
  type LoggedEvent,
  type ReadModel,
  type ReadModelRules,
} from './projection.rules.js';

/**
 * Rows per statement. Each statement binds one array per column (`unnest`), so the 65,535-parameter limit never
 * bites; the chunk only bounds the size of one statement.
 */
const CHUNK_ROWS = 2000;

export interface ProjectedBatch {
  /** The events this batch archived, in log order; events archived before (a redelivery) are not in it. */
  applied: EventEnvelope[];
  /** When the transaction committed. */
  committedAt: Date;
}

interface UpsertStatement {
  sql: string;
  columns: { property: string; jsonb: boolean }[];
  rules: ReadModelRules<Record<string, unknown>>;
}

/** Stream ids order as (milliseconds, sequence) pairs; as text, `9-0` would sort after `10-0`. */
function streamIdKey(column: string): string {
  return `(split_part(${column}, '-', 1)::numeric, split_part(${column}, '-', 2)::numeric)`;
}

// One jsonb parameter: Postgres parses the batch once and hands each envelope over as jsonb, where a jsonb[]
// parameter would be parsed twice (as an array literal, then per element) at several times the cost. The columns
// that repeat envelope fields are read from the envelope itself, so the batch's text carries each of them once.
const ARCHIVE = `
  INSERT INTO event_log (id, partition, entry_id, kind, group_id, created_at, envelope)
  SELECT e->>'id', p, i, e->>'kind', e->>'groupId', (e->>'createdAt')::timestamptz, e
  FROM jsonb_to_recordset($1::jsonb) AS batch(p integer, i text, e jsonb)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, seq`;

const TRIGGERS = `
  SELECT id, seq, envelope->'payload'->>'selfId' AS self_id
  FROM event_log
  WHERE id = ANY($1::text[]) AND kind IN ('message.observed', 'message.direct')`;

// Every partition of the transaction in one statement (a partition has one row: one batch per reader in flight).
const CHECKPOINT = `
  INSERT INTO projection_checkpoints AS c (projector, partition, last_entry_id, last_event_id, events_applied, updated_at)
  SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[])
  ON CONFLICT (projector, partition) DO UPDATE SET
    last_entry_id = CASE WHEN ${streamIdKey('EXCLUDED.last_entry_id')} > ${streamIdKey('c.last_entry_id')}
      THEN EXCLUDED.last_entry_id ELSE c.last_entry_id END,
    last_event_id = CASE WHEN ${streamIdKey('EXCLUDED.last_entry_id')} > ${streamIdKey('c.last_entry_id')}
      THEN EXCLUDED.last_event_id ELSE c.last_event_id END,
    events_applied = c.events_applied + EXCLUDED.events_applied,
    updated_at = GREATEST(c.updated_at, EXCLUDED.updated_at)`;

/** A `\u0000` escape in JSON text (not an escaped backslash followed by `u0000`). */
const NUL_ESCAPE = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * One archive row as JSON text: the entry's partition and id and the envelope. Postgres stores no U+0000, in text
 * or jsonb, so an event carrying one would fail its batch again and again and end in the dead-letter stream; it is
 * archived and folded with U+FFFD in its place instead (`event` is then the envelope with the replacement, as
 * replay will read it back from `event_log`). The envelope is serialised once, and parsed again only when it
 * carries a NUL.
 */
export function archiveRow(entry: BatchEntry): { json: string; event: EventEnvelope } {
  // The reader's own text of the entry when it has it: `event` is its parse, so it says the same, unserialised again.
  let envelope = entry.json ?? JSON.stringify(entry.event);
  let event = entry.event;
  if (envelope.includes('\\u0000')) {
    envelope = envelope.replace(NUL_ESCAPE, '$1\\ufffd');
    event = JSON.parse(envelope) as EventEnvelope;
  }
  return { json: `{"p":${entry.partition},"i":${JSON.stringify(entry.entryId)},"e":${envelope}}`, event };
}

/** How a statement is run: prepared by name on the projector's path, as plain text when replay rebuilds. */
type Run = <T>(manager: EntityManager, sql: string, params: unknown[]) => Promise<T>;

const plainQuery: Run = (manager, sql, params) => manager.query(sql, params);

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The projector's writer. One transaction per batch: archive the events into `event_log` (already archived ones
 * are skipped), fold only the newly archived ones, upsert each read model with one statement per chunk, and move
 * the checkpoint. A redelivered batch archives nothing and so changes nothing.
 */
@Injectable()
export class ProjectionRepository {
  private readonly statements = new Map<ReadModel, UpsertStatement>();
  /** How the projector's own statements run: prepared by name unless `QUNLI_DB_PREPARED_STATEMENTS` is false. */
  private readonly run: Run;

  constructor(
    private readonly dataSource: DataSource,
    @Optional() config?: QunliConfig,
  ) {
    this.run = config?.QUNLI_DB_PREPARED_STATEMENTS === 'false' ? plainQuery : preparedQuery;
  }

  async project(projector: string, entries: readonly BatchEntry[]): Promise<ProjectedBatch> {
    if (entries.length === 0) return { applied: [], committedAt: new Date() };
    const logged = await this.dataSource.transaction(async (manager) => {
      const archived = await this.archive(manager, entries);
      await this.writeReadModels(manager, archived, this.run);
      await this.checkpoint(manager, projector, entries, new Set(archived.map((l) => l.event.id)));
      return archived;
    });
    return { applied: logged.map((l) => l.event), committedAt: new Date() };
  }

  /**
   * Fold events that are already in `event_log` into the read models `manager` sees first on its search path.
   * Replay uses this to rebuild the tables in a scratch schema; its statements go as plain text, so none is prepared
   * on a pooled connection under the scratch schema's search path.
   */
  async rebuild(manager: EntityManager, events: readonly LoggedEvent[]): Promise<void> {
    await this.writeReadModels(manager, events, plainQuery);
  }

  private async archive(manager: EntityManager, entries: readonly BatchEntry[]): Promise<LoggedEvent[]> {
    const unique = new Map<string, EventEnvelope>();
    const rows: string[] = [];
    for (const entry of entries) {
      if (unique.has(entry.event.id)) continue;
      const { json, event } = archiveRow(entry);
      unique.set(event.id, event);
      rows.push(json);
    }
    const seqs = new Map<string, number>();
    for (const chunk of chunks(rows, CHUNK_ROWS)) {
      const inserted = await this.run<{ id: string; seq: string }[]>(manager, ARCHIVE, [`[${chunk.join(',')}]`]);
      for (const row of inserted) seqs.set(row.id, Number(row.seq));
    }
    const archived: LoggedEvent[] = [];
    for (const event of unique.values()) {
      const seq = seqs.get(event.id);
      if (seq !== undefined) archived.push({ seq, event });
    }
    return archived;
  }

  private async writeReadModels(manager: EntityManager, events: readonly LoggedEvent[], run: Run): Promise<void> {
    if (events.length === 0) return;
    const projection = foldEvents(events, await this.context(manager, events, run));
    for (const model of READ_MODELS) {
      const rows = [...projection[model].values()] as Record<string, unknown>[];
      if (rows.length > 0) await this.upsert(manager, model, rows, run);
    }
  }

  private async context(manager: EntityManager, events: readonly LoggedEvent[], run: Run): Promise<FoldContext> {
    const needed = triggersNeeded(events);
    const triggers: FoldContext['triggers'] = new Map(
      needed.length === 0
        ? []
        : (
            await run<{ id: string; seq: string; self_id: string | null }[]>(manager, TRIGGERS, [
              arrayParameter(needed),
            ])
          )
            .filter((row) => row.self_id !== null)
            .map((row) => [row.id, { selfId: row.self_id!, seq: Number(row.seq) }]),
    );
    return { triggers };
  }

  private async upsert(
    manager: EntityManager,
    model: ReadModel,
    rows: Record<string, unknown>[],
    run: Run,
  ): Promise<void> {
    const statement = this.statement(model);
    // Rows in key order: two transactions touching the same rows lock them in the same order, never deadlock.
    const keyed = rows.map((row) => [rowKey(statement.rules, row), row] as const);
    keyed.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const chunk of chunks(keyed, CHUNK_ROWS)) {
      const params = statement.columns.map(({ property, jsonb }) =>
        arrayParameter(
          chunk.map(([, row]) => {
            const value = row[property];
            if (value === undefined || value === null) return null;
            if (jsonb) return JSON.stringify(value);
            return value instanceof Date ? value.toISOString() : value;
          }),
        ),
      );
      await run(manager, statement.sql, params);
    }
  }

  /**
   * `INSERT … SELECT * FROM unnest(…) ON CONFLICT (key) DO UPDATE` built from the entity's columns and the
   * model's merge rules, the SQL twin of `mergeRow`.
   */
  private statement(model: ReadModel): UpsertStatement {
    const cached = this.statements.get(model);
    if (cached) return cached;
    const metadata = this.dataSource.getMetadata(READ_MODEL_ENTITIES[model]);
    const rules = READ_MODEL_RULES[model] as unknown as ReadModelRules<Record<string, unknown>>;
    const primary = metadata.primaryColumns.map((c) => c.propertyName);
    if (primary.join() !== rules.key.join()) {
      throw new Error(`${model}: entity key (${primary.join()}) differs from the projection key (${rules.key.join()})`);
    }
    // A column the database fills itself (`memory_messages.search_vector`, by a trigger) is not written.
    const columns = metadata.columns
      .filter((column) => column.isInsert)
      .map((column) => ({
        property: column.propertyName,
        name: quoteIdent(column.databaseName),
        type: this.dataSource.driver.normalizeType(column),
      }));
    const nameOf = (property: PropertyKey): string => {
      const column = columns.find((c) => c.property === property);
      if (!column) throw new Error(`${model}: the entity has no column for ${String(property)}`);
      return column.name;
    };
    const keys = new Set<string>(rules.key);
    const greatest = new Set<string>(rules.greatest ?? []);
    const grouped = new Set<string>(rules.versioned ? [rules.versioned.version, ...rules.versioned.columns] : []);
    const version = rules.versioned ? nameOf(rules.versioned.version) : '';
    const newerVersion = `EXCLUDED.${version} IS NOT NULL AND (t.${version} IS NULL OR EXCLUDED.${version} >= t.${version})`;
    const sets = columns
      .filter((c) => !keys.has(c.property))
      .map(({ property, name }) => {
        if (grouped.has(property))
          return `${name} = CASE WHEN ${newerVersion} THEN EXCLUDED.${name} ELSE t.${name} END`;
        if (greatest.has(property)) return `${name} = GREATEST(EXCLUDED.${name}, t.${name})`;
        return `${name} = COALESCE(EXCLUDED.${name}, t.${name})`;
      });
    const sql = [
      `INSERT INTO ${quoteIdent(metadata.tableName)} AS t (${columns.map((c) => c.name).join(', ')})`,
      `SELECT * FROM unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')})`,
      `ON CONFLICT (${rules.key.map(nameOf).join(', ')}) DO UPDATE SET ${sets.join(', ')}`,
    ].join('\n');
    const statement: UpsertStatement = {
      sql,
      columns: columns.map((c) => ({ property: c.property, jsonb: c.type === 'jsonb' })),
      rules,
    };
    this.statements.set(model, statement);
    return statement;
  }

  private async checkpoint(
    manager: EntityManager,
    projector: string,
    entries: readonly BatchEntry[],
    archived: ReadonlySet<string>,
  ): Promise<void> {
    const byPartition = new Map<number, { last: BatchEntry; counted: Set<string>; newest: string; newestMs: number }>();
    for (const entry of entries) {
      const { event } = entry;
      const createdMs = Date.parse(event.createdAt);
      let partition = byPartition.get(entry.partition);
      if (!partition) {
        partition = { last: entry, counted: new Set(), newest: event.createdAt, newestMs: createdMs };
        byPartition.set(entry.partition, partition);
      }
      partition.last = entry;
      if (archived.has(event.id)) partition.counted.add(event.id);
      if (createdMs > partition.newestMs) {
        partition.newest = event.createdAt;
        partition.newestMs = createdMs;
      }
    }
    // In partition order, as every upsert takes its rows in key order.
    const rows = [...byPartition].sort(([a], [b]) => a - b);
    await this.run(manager, CHECKPOINT, [
      projector,
      arrayParameter(rows.map(([partition]) => partition)),
      arrayParameter(rows.map(([, p]) => p.last.entryId)),
      arrayParameter(rows.map(([, p]) => p.last.event.id)),
      arrayParameter(rows.map(([, p]) => p.counted.size)),
      arrayParameter(rows.map(([, p]) => p.newest)),
    ]);
  }
}
