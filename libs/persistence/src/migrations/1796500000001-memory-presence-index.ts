import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every query of `memory_messages` by person also names the group: the sender's presence in the prompt's sender
 * section (how many messages, since when), the newest name someone used, and which shared facts a group may see.
 * With an index on `user_id` alone, each read every message that person ever wrote, from the table, in any group.
 * `(group_id, user_id, sent_at) INCLUDE (from_self)` answers them from the index alone (ADR-0050).
 */
export class MemoryPresenceIndex1796500000001 implements MigrationInterface {
  name = 'MemoryPresenceIndex1796500000001';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE INDEX memory_messages_group_user_idx ON memory_messages (group_id, user_id, sent_at) INCLUDE (from_self);
      DROP INDEX memory_messages_user_idx;
    `);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE INDEX memory_messages_user_idx ON memory_messages (user_id);
      DROP INDEX memory_messages_group_user_idx;
    `);
  }
}
