import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

export interface Person {
  userId: string;
  displayName: string;
}

/** People of a group as event memory knows them (the newest name each used). */
@Injectable()
export class PeopleRepository {
  constructor(private readonly dataSource: DataSource) {}

  async byId(groupId: string, userId: string): Promise<Person | null> {
    const [row] = await this.dataSource.query<{ user_id: string; display_name: string }[]>(
      `SELECT user_id, display_name FROM memory_messages
       WHERE group_id = $1 AND user_id = $2 AND NOT coalesce(from_self, false) ORDER BY sent_at DESC LIMIT 1`,
      [groupId, userId],
    );
    return row ? { userId: row.user_id, displayName: row.display_name } : null;
  }

  /** Exact name first, then the most similar (trigram) name used in the group. */
  async byName(groupId: string, name: string): Promise<Person | null> {
    const [row] = await this.dataSource.query<{ user_id: string; display_name: string }[]>(
      `SELECT user_id, display_name FROM memory_messages
       WHERE group_id = $1 AND NOT coalesce(from_self, false)
         AND (display_name = $2 OR similarity(display_name, $2) > 0.3 OR strpos(display_name, $2) > 0)
       ORDER BY (display_name = $2) DESC, similarity(display_name, $2) DESC, sent_at DESC LIMIT 1`,
      [groupId, name],
    );
    return row ? { userId: row.user_id, displayName: row.display_name } : null;
  }
}
