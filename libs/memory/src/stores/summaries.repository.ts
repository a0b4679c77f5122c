import { Injectable } from '@nestjs/common';
import type { StoredSummary } from './memory.views.js';
import { DataSource } from 'typeorm';
import { anyWordQuery } from '../rules/query-words.rules.js';

interface SummarySqlRow {
  summary_id: string;
  thread_id: string;
  summary: string;
  through_ordinal: number;
  last_message_at: Date;
}

function toSummary(r: SummarySqlRow): StoredSummary {
  return {
    summaryId: r.summary_id,
    threadId: r.thread_id,
    summary: r.summary,
    throughOrdinal: Number(r.through_ordinal),
    lastMessageAt: new Date(r.last_message_at),
  };
}

/** Thread memory: the newest running summary per thread, and older threads' summaries by relevance. */
@Injectable()
export class SummariesRepository {
  constructor(private readonly dataSource: DataSource) {}

  async latest(groupId: string, threadId: string): Promise<StoredSummary | null> {
    const [row] = await this.dataSource.query<SummarySqlRow[]>(
      `SELECT summary_id, thread_id, summary, through_ordinal, last_message_at FROM memory_summaries
       WHERE group_id = $1 AND thread_id = $2 ORDER BY through_ordinal DESC LIMIT 1`,
      [groupId, threadId],
    );
    return row ? toSummary(row) : null;
  }

  /** The newest summary of other threads of the group matching any of `words` (a late question about an old topic). */
  async related(
    groupId: string,
    words: readonly string[],
    excludeThread: string | null,
    limit: number,
  ): Promise<StoredSummary[]> {
    const query = anyWordQuery(words);
    if (query === null) return [];
    const rows = await this.dataSource.query<SummarySqlRow[]>(
      `SELECT DISTINCT ON (thread_id) summary_id, thread_id, summary, through_ordinal, last_message_at
       FROM memory_summaries
       WHERE group_id = $1 AND thread_id IS DISTINCT FROM $2
         AND to_tsvector('simple', coalesce(terms, '')) @@ to_tsquery('simple', $3)
       ORDER BY thread_id, through_ordinal DESC`,
      [groupId, excludeThread, query],
    );
    return rows
      .map(toSummary)
      .sort((a, b) => b.lastMessageAt.getTime() - a.lastMessageAt.getTime())
      .slice(0, limit);
  }
}
