import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Attention's read models (issue 7): `threads` (participants, last activity, open questions, live or idle) from
 * `thread.updated` / `thread.idle`, and `group_actors` (last reply, budget, cooldown, live threads) from
 * `group.actor.updated`. Nullable columns, as in the first migration: rows are merges of partial rows.
 */
export class ThreadsAndActors1796300000000 implements MigrationInterface {
  name = 'ThreadsAndActors1796300000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE threads (
        thread_id text NOT NULL,
        group_id text,
        started_at timestamptz,
        last_activity_at timestamptz,
        participants jsonb,
        messages integer,
        bot_joined boolean,
        last_bot_reply_at timestamptz,
        open_questions jsonb,
        status text,
        last_link text,
        idle_at timestamptz,
        version integer,
        CONSTRAINT threads_pkey PRIMARY KEY (thread_id)
      );
      CREATE INDEX threads_group_activity_idx ON threads (group_id, last_activity_at);

      CREATE TABLE group_actors (
        group_id text NOT NULL,
        last_bot_reply_at timestamptz,
        last_partner_id text,
        replies_in_window integer,
        budget integer,
        cooldown_until timestamptz,
        active_threads jsonb,
        active_events integer,
        reason text,
        updated_at timestamptz,
        version bigint,
        CONSTRAINT group_actors_pkey PRIMARY KEY (group_id)
      );
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP TABLE group_actors;
      DROP TABLE threads;
    `);
  }
}
