import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `event_log` keeps only the indexes something reads (ADR-0027): the primary key (`seq`: replay, erasure and the
 * tools page through it) and the unique `id` (the archive's `ON CONFLICT`, lookups by event id). Nothing queries
 * the log by group, and the queries by kind (forget-user, `why`, test tools) also filter on the envelope and match
 * a large share of the log, so a scan serves them as well. Each archived event inserted into both indexes:
 * four events per chat message.
 */
export class LighterEventLog1796400000000 implements MigrationInterface {
  name = 'LighterEventLog1796400000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP INDEX event_log_group_seq_idx;
      DROP INDEX event_log_kind_idx;
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE INDEX event_log_group_seq_idx ON event_log (group_id, seq);
      CREATE INDEX event_log_kind_idx ON event_log (kind);
    `);
  }
}
