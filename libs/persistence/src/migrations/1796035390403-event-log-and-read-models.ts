import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event archive, the first read models and projection checkpoints.
 *
 * Read-model columns are nullable on purpose: a row is the merge of partial rows from several events (a decision
 * may be projected before its message is, after a crash), and every column is a function of the events alone.
 */
export class EventLogAndReadModels1796035390403 implements MigrationInterface {
  name = 'EventLogAndReadModels1796035390403';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE event_log (
        seq bigserial NOT NULL,
        id text NOT NULL,
        partition integer NOT NULL,
        entry_id text NOT NULL,
        kind text NOT NULL,
        group_id text,
        created_at timestamptz NOT NULL,
        envelope jsonb NOT NULL,
        archived_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT event_log_pkey PRIMARY KEY (seq)
      );
      CREATE UNIQUE INDEX event_log_id_key ON event_log (id);
      CREATE INDEX event_log_group_seq_idx ON event_log (group_id, seq);
      CREATE INDEX event_log_kind_idx ON event_log (kind);

      CREATE TABLE messages (
        event_id text NOT NULL,
        group_id text,
        message_id text,
        user_id text,
        display_name text,
        text text,
        segments jsonb,
        direct boolean,
        direct_reason text,
        from_self boolean,
        sent_at timestamptz,
        CONSTRAINT messages_pkey PRIMARY KEY (event_id)
      );
      CREATE INDEX messages_group_sent_idx ON messages (group_id, sent_at);

      CREATE TABLE events (
        id text NOT NULL,
        group_id text,
        kind text,
        state text,
        reason text,
        outcome text,
        features jsonb,
        episode_id text,
        updated_at timestamptz,
        transition_seq integer,
        CONSTRAINT events_pkey PRIMARY KEY (id)
      );
      CREATE INDEX events_group_state_idx ON events (group_id, state);

      CREATE TABLE event_transitions (
        event_id text NOT NULL,
        seq integer NOT NULL,
        from_state text,
        to_state text,
        reason text,
        forced boolean,
        at timestamptz,
        CONSTRAINT event_transitions_pkey PRIMARY KEY (event_id, seq)
      );

      CREATE TABLE episodes (
        id text NOT NULL,
        group_id text,
        trigger_event_id text,
        state text,
        outcome text,
        model text,
        attempt integer,
        max_steps integer,
        deadline timestamptz,
        started_at timestamptz,
        finished_at timestamptz,
        steps integer,
        tokens_in integer,
        tokens_out integer,
        duration_ms double precision,
        error_code text,
        error_message text,
        phase smallint,
        CONSTRAINT episodes_pkey PRIMARY KEY (id)
      );
      CREATE INDEX episodes_trigger_event_idx ON episodes (trigger_event_id);
      CREATE INDEX episodes_group_started_idx ON episodes (group_id, started_at);

      CREATE TABLE episode_steps (
        episode_id text NOT NULL,
        idx integer NOT NULL,
        thought text,
        action jsonb,
        observation jsonb,
        tokens_in integer,
        tokens_out integer,
        latency_ms double precision,
        at timestamptz,
        CONSTRAINT episode_steps_pkey PRIMARY KEY (episode_id, idx)
      );

      CREATE TABLE sends (
        action_id text NOT NULL,
        segment integer NOT NULL,
        group_id text,
        target_type text,
        target_id text,
        episode_id text,
        trigger_event_id text,
        text text,
        state text,
        segment_count integer,
        onebot_message_id text,
        attempts integer,
        error_code text,
        error_message text,
        at timestamptz,
        phase smallint,
        CONSTRAINT sends_pkey PRIMARY KEY (action_id, segment)
      );
      CREATE INDEX sends_episode_idx ON sends (episode_id);

      CREATE TABLE projection_checkpoints (
        projector text NOT NULL,
        partition integer NOT NULL,
        last_entry_id text NOT NULL,
        last_event_id text NOT NULL,
        events_applied bigint NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL,
        CONSTRAINT projection_checkpoints_pkey PRIMARY KEY (projector, partition)
      );
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP TABLE projection_checkpoints;
      DROP TABLE sends;
      DROP TABLE episode_steps;
      DROP TABLE episodes;
      DROP TABLE event_transitions;
      DROP TABLE events;
      DROP TABLE messages;
      DROP TABLE event_log;
    `);
  }
}
