import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the OneBot edge (issue 5) projects: recalled messages are marked, notices and requests get their tables.
 * Every column is a function of the events alone, nullable so partial rows merge (see the first migration).
 */
export class OneBotEdgeProjections1796100000005 implements MigrationInterface {
  name = 'OneBotEdgeProjections1796100000005';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      ALTER TABLE messages ADD COLUMN recalled_at timestamptz;
      CREATE INDEX messages_group_message_idx ON messages (group_id, message_id);

      CREATE TABLE notices (
        event_id text NOT NULL,
        group_id text,
        notice_type text,
        sub_type text,
        user_id text,
        operator_id text,
        target_id text,
        message_id text,
        duration_seconds integer,
        about_self boolean,
        details jsonb,
        reported_at timestamptz,
        CONSTRAINT notices_pkey PRIMARY KEY (event_id)
      );
      CREATE INDEX notices_group_reported_idx ON notices (group_id, reported_at);

      CREATE TABLE requests (
        event_id text NOT NULL,
        group_id text,
        request_type text,
        sub_type text,
        user_id text,
        comment text,
        flag text,
        reported_at timestamptz,
        CONSTRAINT requests_pkey PRIMARY KEY (event_id)
      );
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      DROP TABLE requests;
      DROP TABLE notices;
      DROP INDEX messages_group_message_idx;
      ALTER TABLE messages DROP COLUMN recalled_at;
    `);
  }
}
