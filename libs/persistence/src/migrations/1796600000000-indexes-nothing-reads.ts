import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Read-model indexes that no query of the code or its tools uses, dropped (ADR-0052): every projected row paid for
 * them. `memory_messages_text_trgm_idx` indexed each message's text by trigram, ≈ a third of the table's insert time,
 * for substring lookups that no query makes (event memory and jargon search `search_vector`, names and terms are
 * compared with pg_trgm's functions on other columns). `events_group_state_idx`, `timers_group_state_idx`,
 * `timers_subject_idx` and `threads_group_activity_idx` serve lookups by group or subject that nothing makes: the
 * code reads these tables by their keys. `pg_trgm` stays: `similarity()` ranks names and jargon terms.
 */
export class IndexesNothingReads1796600000000 implements MigrationInterface {
  name = 'IndexesNothingReads1796600000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP INDEX memory_messages_text_trgm_idx;
      DROP INDEX events_group_state_idx;
      DROP INDEX timers_group_state_idx;
      DROP INDEX timers_subject_idx;
      DROP INDEX threads_group_activity_idx;
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE INDEX memory_messages_text_trgm_idx ON memory_messages USING gin (text gin_trgm_ops);
      CREATE INDEX events_group_state_idx ON events (group_id, state);
      CREATE INDEX timers_group_state_idx ON timers (group_id, state);
      CREATE INDEX timers_subject_idx ON timers (subject_event_id);
      CREATE INDEX threads_group_activity_idx ON threads (group_id, last_activity_at);
    `);
  }
}
