import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The keyword lexicon's read models (ADR-0020): sets with their versions, terms (a removed term keeps its row with
 * status `removed`, so the panel can say why it went), and the hits each decision recorded. Nullable columns, as in
 * the first migration: rows are merges of partial rows from several events.
 */
export class KeywordLexicon1796310000000 implements MigrationInterface {
  name = 'KeywordLexicon1796310000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE keyword_sets (
        scope text NOT NULL,
        owner_id text NOT NULL,
        version integer,
        terms integer,
        updated_at timestamptz,
        CONSTRAINT keyword_sets_pkey PRIMARY KEY (scope, owner_id)
      );

      CREATE TABLE keyword_terms (
        term_id text NOT NULL,
        scope text,
        owner_id text,
        text text,
        aliases jsonb,
        weight double precision,
        confidence double precision,
        source text,
        status text,
        sightings integer,
        first_seen_at timestamptz,
        last_seen_at timestamptz,
        expires_at timestamptz,
        last_change text,
        reason text,
        changed_at timestamptz,
        version integer,
        CONSTRAINT keyword_terms_pkey PRIMARY KEY (term_id)
      );
      CREATE INDEX keyword_terms_set_idx ON keyword_terms (scope, owner_id, status);

      CREATE TABLE keyword_hits (
        event_id text NOT NULL,
        term_id text NOT NULL,
        group_id text,
        thread_id text,
        term text,
        scope text,
        weight double precision,
        outcome text,
        matched_at timestamptz,
        CONSTRAINT keyword_hits_pkey PRIMARY KEY (event_id, term_id)
      );
      CREATE INDEX keyword_hits_term_idx ON keyword_hits (term_id, matched_at);
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP TABLE keyword_hits;
      DROP TABLE keyword_terms;
      DROP TABLE keyword_sets;
    `);
  }
}
