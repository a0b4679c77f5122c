import type { DataSource, EntityManager } from 'typeorm';
import type { EventEnvelope } from '@app/contracts';
import { READ_MODEL_ENTITIES } from './data-source.js';
import { quoteIdent } from './migrator.js';
import { ProjectionRepository } from './projection/projection.repository.js';
import { READ_MODELS, type LoggedEvent } from './projection/projection.rules.js';

/*
 * Physical erasure of events (ADR-0016): an operator's "forget this person" and memory retention. The events go
 * from `event_log`, and every read model is rebuilt from what remains by the projector's own fold, so the live
 * tables are exactly what replay would build and nothing derived from an erased event survives anywhere in
 * Postgres. One transaction; the projector waits on the lock meanwhile (it loses nothing, it only pauses).
 */

/** Which events to erase: the seed messages, and everything that rests on them. */
export type ErasureCriteria = { kind: 'user'; userId: string } | { kind: 'before'; before: Date };

export interface ErasedEvent {
  id: string;
  partition: number;
  entryId: string;
}

export interface ErasureReport {
  events: ErasedEvent[];
  /** Read-model rows before → after the rebuild, per table. */
  rows: Record<string, { before: number; after: number }>;
}

const MESSAGE_KINDS = `('message.observed', 'message.direct')`;

function seedSql(criteria: ErasureCriteria): { sql: string; params: unknown[] } {
  return criteria.kind === 'user'
    ? {
        sql: `SELECT id FROM event_log WHERE kind IN ${MESSAGE_KINDS} AND envelope->'payload'->'sender'->>'userId' = $1`,
        params: [criteria.userId],
      }
    : { sql: `SELECT id FROM event_log WHERE kind IN ${MESSAGE_KINDS} AND created_at < $1`, params: [criteria.before] };
}

function erasedSql(criteria: ErasureCriteria): { sql: string; params: unknown[] } {
  const seed = seedSql(criteria);
  // Rests on a seed message: its own id, its causal chain (decisions, episodes, sends answering it), memory
  // written from it (evidence), and — for a person — everything that names them as an actor or subject.
  const person =
    criteria.kind === 'user'
      ? `OR e.envelope->'actorIds' ? $1
         OR (e.kind = 'memory.fact.learned' AND (e.envelope->'payload'->>'subjectUserId' = $1
             OR e.envelope->'payload'->>'relatedUserId' = $1))
         OR (e.kind = 'message.recalled' AND e.envelope->'payload'->>'userId' = $1)
         OR (e.kind IN ('thread.updated', 'thread.idle') AND e.envelope->'payload'->'participants' ? $1)
         OR (e.kind = 'group.actor.updated' AND e.envelope->'payload'->>'lastPartnerId' = $1)`
      : `OR (e.kind LIKE 'memory.%' AND e.created_at < $1)`;
  return {
    sql: `WITH seeds AS (${seed.sql})
      SELECT e.id, e.partition, e.entry_id FROM event_log e
      WHERE e.id IN (SELECT id FROM seeds)
         OR e.envelope->>'correlationId' IN (SELECT id FROM seeds)
         OR (e.kind LIKE 'memory.%' AND EXISTS (
               SELECT 1 FROM jsonb_array_elements_text(e.envelope->'evidenceMessageIds') AS ev(id)
               WHERE ev.id IN (SELECT id FROM seeds)))
         ${person}`,
    params: seed.params,
  };
}

/**
 * Thread snapshots and group-actor facts a move event carries (`payload.turn`, ADR-0024) that name the person: a
 * standalone `thread.updated`/`thread.idle`/`group.actor.updated` naming them is erased (above); carried inside a
 * decision about someone else's message they are cut out of it instead, so the rebuilt rows are those the log of
 * standalone facts would give, and the decision stays.
 */
const STRIP_CARRIED_SQL = `
  WITH carriers AS (
    SELECT id, envelope->'payload'->'turn' AS t FROM event_log
    WHERE kind IN ('decision.made', 'event.transitioned') AND envelope->'payload' ? 'turn'
      AND (envelope->'payload'->'turn'->'actor'->>'lastPartnerId' = $1
        OR EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(envelope->'payload'->'turn'->'threads', '[]'))
                     AS x(s) WHERE x.s->'participants' ? $1)
        OR EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(envelope->'payload'->'turn'->'threadsIdle', '[]'))
                     AS x(s) WHERE x.s->'participants' ? $1))),
  updated AS (UPDATE event_log e SET envelope = jsonb_set(e.envelope, '{payload,turn}',
    (c.t - 'actor' - 'threads' - 'threadsIdle')
    || CASE WHEN c.t->'actor' IS NULL OR c.t->'actor'->>'lastPartnerId' = $1 THEN '{}'::jsonb
            ELSE jsonb_build_object('actor', c.t->'actor') END
    || jsonb_build_object('threads', COALESCE((
         SELECT jsonb_agg(x.s ORDER BY x.i) FROM jsonb_array_elements(COALESCE(c.t->'threads', '[]'))
           WITH ORDINALITY AS x(s, i) WHERE NOT (x.s->'participants' ? $1)), '[]'))
    || jsonb_build_object('threadsIdle', COALESCE((
         SELECT jsonb_agg(x.s ORDER BY x.i) FROM jsonb_array_elements(COALESCE(c.t->'threadsIdle', '[]'))
           WITH ORDINALITY AS x(s, i) WHERE NOT (x.s->'participants' ? $1)), '[]')))
  FROM carriers c WHERE e.id = c.id RETURNING e.id)
  SELECT count(*)::int AS n FROM updated`;

const REBUILD_BATCH = 5000;

export async function eraseEvents(dataSource: DataSource, criteria: ErasureCriteria): Promise<ErasureReport> {
  const tables = READ_MODELS.map((model) => dataSource.getMetadata(READ_MODEL_ENTITIES[model]).tableName);
  return dataSource.transaction(async (db) => {
    await db.query('LOCK TABLE event_log IN SHARE ROW EXCLUSIVE MODE');
    const { sql, params } = erasedSql(criteria);
    const found = await db.query<{ id: string; partition: number; entry_id: string }[]>(sql, params);
    const events = found.map((r) => ({ id: r.id, partition: Number(r.partition), entryId: r.entry_id }));
    const rows: ErasureReport['rows'] = {};
    const stripped =
      criteria.kind === 'user' ? (await db.query<[{ n: number }]>(STRIP_CARRIED_SQL, [criteria.userId]))[0].n : 0;
    if (events.length === 0 && stripped === 0) return { events, rows };
    await db.query('DELETE FROM event_log WHERE id = ANY($1::text[])', [events.map((e) => e.id)]);
    for (const table of tables) {
      const [{ n }] = await db.query<[{ n: number }]>(`SELECT count(*)::int AS n FROM ${quoteIdent(table)}`);
      rows[table] = { before: n, after: 0 };
      await db.query(`DELETE FROM ${quoteIdent(table)}`);
    }
    await refold(db, new ProjectionRepository(dataSource));
    for (const table of tables) {
      const [{ n }] = await db.query<[{ n: number }]>(`SELECT count(*)::int AS n FROM ${quoteIdent(table)}`);
      rows[table]!.after = n;
    }
    return { events, rows };
  });
}

async function refold(db: EntityManager, repository: ProjectionRepository): Promise<void> {
  let after = '0';
  for (;;) {
    const batch = await db.query<{ seq: string; envelope: EventEnvelope }[]>(
      'SELECT seq, envelope FROM event_log WHERE seq > $1 ORDER BY seq LIMIT $2',
      [after, REBUILD_BATCH],
    );
    if (batch.length === 0) return;
    const logged: LoggedEvent[] = batch.map((r) => ({ seq: Number(r.seq), event: r.envelope }));
    await repository.rebuild(db, logged);
    after = batch[batch.length - 1]!.seq;
  }
}
