import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `memory_messages` keeps each message's `tsvector` in a column (ADR-0049), so a search reads it instead of
 * computing `to_tsvector` again for every row it looks at. The column is filled by PostgreSQL's built-in
 * `tsvector_update_trigger` (C, no PL/pgSQL) on insert and whenever `terms` changes; the GIN index moves from the
 * expression to the column. The existing rows are filled by adding the column as a generated one (one table
 * rewrite, no dead rows) and then dropping its expression, which leaves a plain column. A generated column is not
 * kept: TypeORM keeps a generated column's expression in its own table under the database's name, which a database
 * cloned or restored under another name no longer matches.
 */
export class MemoryMessageVectors1796500000000 implements MigrationInterface {
  name = 'MemoryMessageVectors1796500000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      ALTER TABLE memory_messages
        ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(terms, ''))) STORED;
      ALTER TABLE memory_messages ALTER COLUMN search_vector DROP EXPRESSION;
      CREATE TRIGGER memory_messages_search_vector
        BEFORE INSERT OR UPDATE OF terms ON memory_messages
        FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger(search_vector, 'pg_catalog.simple', terms);
      CREATE INDEX memory_messages_vector_idx ON memory_messages USING gin (search_vector);
      DROP INDEX memory_messages_terms_idx;
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE INDEX memory_messages_terms_idx ON memory_messages USING gin (to_tsvector('simple', coalesce(terms, '')));
      DROP INDEX memory_messages_vector_idx;
      DROP TRIGGER memory_messages_search_vector ON memory_messages;
      ALTER TABLE memory_messages DROP COLUMN search_vector;
    `);
  }
}
