import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cognition's read models (issue 8): every LLM call with its tokens (`llm_calls`), the persona versions in force
 * (`personas`), and what episodes and steps now record (what ended an episode, its persona version, models,
 * calls, waiting). Projected from `llm.called`, `persona.published`, `episode.*`; replay rebuilds them.
 */
export class CognitionAccounting1796200000000 implements MigrationInterface {
  name = 'CognitionAccounting1796200000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      ALTER TABLE episodes
        ADD COLUMN ended_by text,
        ADD COLUMN end_reason text,
        ADD COLUMN llm_calls integer,
        ADD COLUMN persona_version text,
        ADD COLUMN planner_model text,
        ADD COLUMN token_budget integer,
        ADD COLUMN waiting_cause text,
        ADD COLUMN resume_at timestamptz;

      ALTER TABLE episode_steps
        ADD COLUMN model text,
        ADD COLUMN llm_calls integer;

      CREATE TABLE llm_calls (
        call_id text NOT NULL,
        event_id text,
        episode_id text,
        group_id text,
        role text,
        model text,
        purpose text,
        outcome text,
        tokens_in integer,
        tokens_out integer,
        estimated boolean,
        attempts integer,
        latency_ms double precision,
        step integer,
        at timestamptz,
        CONSTRAINT llm_calls_pkey PRIMARY KEY (call_id)
      );
      CREATE INDEX llm_calls_episode_idx ON llm_calls (episode_id);
      CREATE INDEX llm_calls_group_at_idx ON llm_calls (group_id, at);
      CREATE INDEX llm_calls_role_model_idx ON llm_calls (role, model);

      CREATE TABLE personas (
        version text NOT NULL,
        name text,
        source text,
        policy jsonb,
        published_at timestamptz,
        CONSTRAINT personas_pkey PRIMARY KEY (version)
      );
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP TABLE personas;
      DROP TABLE llm_calls;
      ALTER TABLE episode_steps DROP COLUMN model, DROP COLUMN llm_calls;
      ALTER TABLE episodes DROP COLUMN ended_by, DROP COLUMN end_reason, DROP COLUMN llm_calls,
        DROP COLUMN persona_version, DROP COLUMN planner_model, DROP COLUMN token_budget,
        DROP COLUMN waiting_cause, DROP COLUMN resume_at;
    `);
  }
}
