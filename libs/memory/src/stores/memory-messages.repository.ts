import { Injectable } from '@nestjs/common';
import type { RecalledMessage } from './memory.views.js';
import { DataSource } from 'typeorm';
import { anyWordQuery } from '../rules/query-words.rules.js';

// Ranks every match, reading each message's stored vector (ADR-0049); ties go to the newest, then the larger id.
const SEARCH = `
  WITH recent AS (
    SELECT event_id FROM memory_messages WHERE group_id = $1 AND sent_at <= $5 ORDER BY sent_at DESC LIMIT $2
  ), q AS (SELECT to_tsquery('simple', $3) AS query)
  SELECT m.event_id, m.user_id, m.display_name, m.from_self, m.sent_at, m.text,
         ts_rank(m.search_vector, q.query) AS rank
  FROM memory_messages m, q
  WHERE m.group_id = $1 AND m.sent_at <= $5
    AND m.search_vector @@ q.query
    AND m.event_id NOT IN (SELECT event_id FROM recent)
  ORDER BY rank DESC, m.sent_at DESC, m.event_id DESC
  LIMIT $4`;

/**
 * Event memory (ADR-0016): every message of a group is searchable as soon as the projector has it, before any
 * summary or fact extraction ran. Always per group.
 */
@Injectable()
export class MemoryMessagesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Messages of `groupId` matching any of `words`, best first, leaving out the newest `skipRecent` (the prompt's
   * recent window already shows them) and anything after `before` (product time of the question).
   */
  async search(
    groupId: string,
    words: readonly string[],
    options: { skipRecent: number; limit: number; before: Date },
  ): Promise<RecalledMessage[]> {
    const query = anyWordQuery(words);
    if (query === null) return [];
    const rows = await this.dataSource.query<
      {
        event_id: string;
        user_id: string | null;
        display_name: string | null;
        from_self: boolean | null;
        sent_at: Date;
        text: string | null;
        rank: number;
      }[]
    >(SEARCH, [groupId, options.skipRecent, query, options.limit, options.before]);
    return rows.map((r) => ({
      eventId: r.event_id,
      userId: r.user_id ?? '',
      displayName: r.display_name ?? r.user_id ?? '',
      fromSelf: r.from_self === true,
      sentAt: new Date(r.sent_at),
      text: r.text ?? '',
      rank: Number(r.rank),
    }));
  }

  /** How often and since when someone has spoken in a group. */
  async presence(
    groupId: string,
    userId: string,
  ): Promise<{ messages: number; firstAt: Date | null; lastAt: Date | null }> {
    const [row] = await this.dataSource.query<{ n: number; first_at: Date | null; last_at: Date | null }[]>(
      `SELECT count(*)::int AS n, min(sent_at) AS first_at, max(sent_at) AS last_at
       FROM memory_messages WHERE group_id = $1 AND user_id = $2 AND NOT coalesce(from_self, false)`,
      [groupId, userId],
    );
    return { messages: row?.n ?? 0, firstAt: row?.first_at ?? null, lastAt: row?.last_at ?? null };
  }
}
