import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The runtime spine's read models: who moved an event (`event_transitions.actor`), the durable timers as the log
 * tells them (`timers`) and every episode control command (`episode_controls`). Nullable columns, as in the first
 * migration: rows are merges of partial rows from several events.
 */
export class SchedulerTimersAndControls1796210000000 implements MigrationInterface {
  name = 'SchedulerTimersAndControls1796210000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      ALTER TABLE event_transitions ADD COLUMN actor text;

      CREATE TABLE timers (
        timer_id text NOT NULL,
        group_id text,
        purpose text,
        subject_event_id text,
        episode_id text,
        due_at timestamptz,
        set_at timestamptz,
        fired_at timestamptz,
        state text,
        cancel_reason text,
        phase smallint,
        CONSTRAINT timers_pkey PRIMARY KEY (timer_id)
      );
      CREATE INDEX timers_group_state_idx ON timers (group_id, state);
      CREATE INDEX timers_subject_idx ON timers (subject_event_id);

      CREATE TABLE episode_controls (
        episode_id text NOT NULL,
        seq integer NOT NULL,
        group_id text,
        command text,
        reason text,
        event_ids jsonb,
        superseded_by text,
        cause text,
        at timestamptz,
        CONSTRAINT episode_controls_pkey PRIMARY KEY (episode_id, seq)
      );
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP TABLE episode_controls;
      DROP TABLE timers;
      ALTER TABLE event_transitions DROP COLUMN actor;
    `);
  }
}
