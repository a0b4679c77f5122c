import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The life line (agenda, activities, beats, reached milestones) and memory (searchable messages, thread summaries,
 * facts, jargon). Projected from `personal.*`, `message.*` and `memory.*` events like every read model.
 *
 * Search: Postgres' parsers do not segment Chinese, so the projector stores jieba-segmented `terms` and these
 * tables index `to_tsvector('simple', terms)`; `pg_trgm` indexes raw message text for substring lookups (jargon
 * examples, names), which works on CJK text in a UTF-8 database. Creating the extension needs a role allowed to
 * (a superuser, or pg_trgm being trusted, which it is since Postgres 13, for a database owner).
 */
export class AgendaAndMemory1796035391409 implements MigrationInterface {
  name = 'AgendaAndMemory1796035391409';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE EXTENSION IF NOT EXISTS pg_trgm;

      CREATE TABLE agenda (
        persona_id text NOT NULL,
        script_version text,
        mood text,
        timezone text,
        long_term_goals jsonb,
        milestones jsonb,
        default_disclosure text,
        group_disclosure jsonb,
        loaded_at timestamptz,
        CONSTRAINT agenda_pkey PRIMARY KEY (persona_id)
      );

      CREATE TABLE activities (
        id text NOT NULL,
        title text,
        description text,
        started_at timestamptz,
        expected_duration_minutes integer,
        goal_id text,
        private boolean,
        phases jsonb,
        detail text,
        completed_at timestamptz,
        status text,
        phase text,
        progress double precision,
        next_beat_at timestamptz,
        mood text,
        next_title text,
        next_at timestamptz,
        version integer,
        CONSTRAINT activities_pkey PRIMARY KEY (id)
      );
      CREATE INDEX activities_started_idx ON activities (started_at);

      CREATE TABLE beats (
        activity_id text NOT NULL,
        idx integer NOT NULL,
        text text,
        at timestamptz,
        progress double precision,
        CONSTRAINT beats_pkey PRIMARY KEY (activity_id, idx)
      );
      CREATE INDEX beats_at_idx ON beats (at);

      CREATE TABLE agenda_milestones (
        milestone_id text NOT NULL,
        goal_id text,
        title text,
        activity_id text,
        reached_at timestamptz,
        CONSTRAINT agenda_milestones_pkey PRIMARY KEY (milestone_id)
      );

      CREATE TABLE memory_messages (
        event_id text NOT NULL,
        group_id text,
        thread_id text,
        user_id text,
        display_name text,
        from_self boolean,
        sent_at timestamptz,
        text text,
        terms text,
        CONSTRAINT memory_messages_pkey PRIMARY KEY (event_id)
      );
      CREATE INDEX memory_messages_group_sent_idx ON memory_messages (group_id, sent_at);
      CREATE INDEX memory_messages_user_idx ON memory_messages (user_id);
      CREATE INDEX memory_messages_terms_idx ON memory_messages USING gin (to_tsvector('simple', coalesce(terms, '')));
      CREATE INDEX memory_messages_text_trgm_idx ON memory_messages USING gin (text gin_trgm_ops);

      CREATE TABLE memory_summaries (
        summary_id text NOT NULL,
        group_id text,
        thread_id text,
        reason text,
        summary text,
        through_ordinal integer,
        message_count integer,
        participant_ids jsonb,
        last_message_at timestamptz,
        written_at timestamptz,
        terms text,
        CONSTRAINT memory_summaries_pkey PRIMARY KEY (summary_id)
      );
      CREATE INDEX memory_summaries_thread_idx ON memory_summaries (group_id, thread_id, through_ordinal);
      CREATE INDEX memory_summaries_terms_idx ON memory_summaries USING gin (to_tsvector('simple', coalesce(terms, '')));

      CREATE TABLE memory_facts (
        fact_id text NOT NULL,
        group_id text,
        subject_user_id text,
        subject_name text,
        category text,
        key text,
        value text,
        related_user_id text,
        first_learned_at timestamptz,
        terms text,
        status text,
        confidence double precision,
        revision integer,
        sightings integer,
        replaced_by text,
        learned_at timestamptz,
        version bigint,
        CONSTRAINT memory_facts_pkey PRIMARY KEY (fact_id)
      );
      CREATE INDEX memory_facts_subject_idx ON memory_facts (group_id, subject_user_id);
      CREATE INDEX memory_facts_category_idx ON memory_facts (subject_user_id, category);
      CREATE INDEX memory_facts_terms_idx ON memory_facts USING gin (to_tsvector('simple', coalesce(terms, '')));

      CREATE TABLE memory_jargon (
        group_id text NOT NULL,
        term text NOT NULL,
        status text,
        meaning text,
        sightings integer,
        users integer,
        learned_at timestamptz,
        CONSTRAINT memory_jargon_pkey PRIMARY KEY (group_id, term)
      );
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP TABLE memory_jargon;
      DROP TABLE memory_facts;
      DROP TABLE memory_summaries;
      DROP TABLE memory_messages;
      DROP TABLE agenda_milestones;
      DROP TABLE beats;
      DROP TABLE activities;
      DROP TABLE agenda;
    `);
  }
}
