import { Injectable } from '@nestjs/common';
import type { WordUse, StoredJargon } from './memory.views.js';
import { DataSource } from 'typeorm';
import type { JargonStatus } from '@app/contracts';
import { anyWordQuery } from '../rules/query-words.rules.js';

/** Jargon (ADR-0016): sightings come straight from event memory, so nothing is counted twice or by the bot. */
@Injectable()
export class JargonRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Words of a group's recent messages used at least `minDocs` times by at least two people, not yet judged. */
  async candidates(groupId: string, since: Date, minDocs: number, limit: number): Promise<WordUse[]> {
    const rows = await this.dataSource.query<{ word: string; docs: number; users: number; elsewhere: number }[]>(
      `WITH words AS (
         SELECT word, count(*)::int AS docs, count(DISTINCT m.user_id)::int AS users
         FROM memory_messages m, unnest(string_to_array(m.terms, ' ')) AS word
         WHERE m.group_id = $1 AND NOT coalesce(m.from_self, false) AND m.sent_at >= $2
         GROUP BY word HAVING count(*) >= $3 AND count(DISTINCT m.user_id) >= 2
         ORDER BY docs DESC LIMIT 500
       )
       SELECT w.word, w.docs, w.users, (
         SELECT count(*)::int FROM memory_messages o
         WHERE o.group_id <> $1 AND o.sent_at >= $2
           AND o.search_vector @@ to_tsquery('simple', quote_literal(w.word))
       ) AS elsewhere
       FROM words w
       WHERE NOT EXISTS (SELECT 1 FROM memory_jargon j WHERE j.group_id = $1 AND j.term = w.word)
       ORDER BY w.docs DESC LIMIT $4`,
      [groupId, since, minDocs, limit],
    );
    return rows.map((r) => ({ word: r.word, docs: r.docs, users: r.users, elsewhere: r.elsewhere }));
  }

  /** Messages of the group (people only), newest first, and the group's and everyone's message counts. */
  async volume(groupId: string, since: Date): Promise<{ group: number; others: number }> {
    const [row] = await this.dataSource.query<{ group_n: number; others_n: number }[]>(
      `SELECT count(*) FILTER (WHERE group_id = $1)::int AS group_n, count(*) FILTER (WHERE group_id <> $1)::int AS others_n
       FROM memory_messages WHERE sent_at >= $2 AND NOT coalesce(from_self, false)`,
      [groupId, since],
    );
    return { group: row?.group_n ?? 0, others: row?.others_n ?? 0 };
  }

  /** Example messages using `term` in the group, newest first (what the utils model reads to infer its meaning). */
  async examples(groupId: string, term: string, limit: number): Promise<{ eventId: string; text: string }[]> {
    const query = anyWordQuery([term]);
    if (query === null) return [];
    const rows = await this.dataSource.query<{ event_id: string; text: string }[]>(
      `SELECT event_id, text FROM memory_messages
       WHERE group_id = $1 AND NOT coalesce(from_self, false)
         AND search_vector @@ to_tsquery('simple', $2)
       ORDER BY sent_at DESC LIMIT $3`,
      [groupId, query, limit],
    );
    return rows.map((r) => ({ eventId: r.event_id, text: r.text }));
  }

  /** Learned terms of the group that occur in `text` (substring match, no model call). */
  async matching(groupId: string, text: string, limit: number): Promise<StoredJargon[]> {
    const rows = await this.dataSource.query<
      { term: string; status: JargonStatus; meaning: string; sightings: number }[]
    >(
      `SELECT term, status, meaning, sightings FROM memory_jargon
       WHERE group_id = $1 AND status = 'learned' AND strpos($2, term) > 0
       ORDER BY length(term) DESC, sightings DESC LIMIT $3`,
      [groupId, text, limit],
    );
    return rows.map((r) => ({ ...r, sightings: Number(r.sightings) }));
  }

  /** A term the group has learned, or its terms similar to `term` (trigram similarity) when not exact. */
  async lookup(groupId: string, term: string, limit: number): Promise<StoredJargon[]> {
    const rows = await this.dataSource.query<
      { term: string; status: JargonStatus; meaning: string; sightings: number }[]
    >(
      `SELECT term, status, meaning, sightings FROM memory_jargon
       WHERE group_id = $1 AND status = 'learned' AND (term = $2 OR similarity(term, $2) > 0.2 OR strpos(term, $2) > 0)
       ORDER BY (term = $2) DESC, similarity(term, $2) DESC LIMIT $3`,
      [groupId, term, limit],
    );
    return rows.map((r) => ({ ...r, sightings: Number(r.sightings) }));
  }
}
