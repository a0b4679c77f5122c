import { Injectable } from '@nestjs/common';
import type { StoredFact } from './memory.views.js';
import { DataSource } from 'typeorm';
import type { FactCategory, FactStatus } from '@app/contracts';
import type { KnownFact } from '../rules/fact-merge.rules.js';
import { anyWordQuery } from '../rules/query-words.rules.js';

const COLUMNS = `f.fact_id, f.group_id, f.subject_user_id, f.subject_name, f.category, f.key, f.value,
  f.related_user_id, f.status, f.confidence, f.revision, f.sightings, f.learned_at`;

/*
 * Which facts a group may see (ADR-0016): its own, and from other groups only facts of a category listed in
 * QUNLI_MEMORY_SHARED_CATEGORIES about someone who has spoken in this group. Nothing else crosses.
 */
const VISIBLE = `(f.group_id = $1 OR (f.category = ANY($2::text[]) AND EXISTS (
  SELECT 1 FROM memory_messages mm WHERE mm.group_id = $1 AND mm.user_id = f.subject_user_id)))
  AND f.status IN ('active', 'disputed')`;

interface FactSqlRow {
  fact_id: string;
  group_id: string;
  subject_user_id: string;
  subject_name: string | null;
  category: FactCategory;
  key: string;
  value: string;
  related_user_id: string | null;
  status: FactStatus;
  confidence: number;
  revision: number;
  sightings: number;
  learned_at: Date;
  rank?: number;
}

function toFact(r: FactSqlRow): StoredFact {
  return {
    factId: r.fact_id,
    groupId: r.group_id,
    subjectUserId: r.subject_user_id,
    subjectName: r.subject_name ?? r.subject_user_id,
    category: r.category,
    key: r.key,
    value: r.value,
    relatedUserId: r.related_user_id,
    status: r.status,
    confidence: Number(r.confidence),
    revision: Number(r.revision),
    sightings: Number(r.sightings),
    learnedAt: new Date(r.learned_at),
    rank: Number(r.rank ?? 0),
  };
}

/** Social memory as the read model holds it. */
@Injectable()
export class FactsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Facts visible in `groupId` matching any of `words`, most relevant and surest first. */
  async search(
    groupId: string,
    words: readonly string[],
    shared: readonly string[],
    limit: number,
  ): Promise<StoredFact[]> {
    const query = anyWordQuery(words);
    if (query === null) return [];
    const rows = await this.dataSource.query<FactSqlRow[]>(
      `SELECT ${COLUMNS}, ts_rank(to_tsvector('simple', coalesce(f.terms, '')), to_tsquery('simple', $3)) AS rank
       FROM memory_facts f
       WHERE ${VISIBLE} AND to_tsvector('simple', coalesce(f.terms, '')) @@ to_tsquery('simple', $3)
       ORDER BY rank DESC, f.confidence DESC, f.learned_at DESC LIMIT $4`,
      [groupId, [...shared], query, limit],
    );
    return rows.map(toFact);
  }

  /** What `groupId` may know about one person, surest first. */
  async about(groupId: string, userId: string, shared: readonly string[], limit: number): Promise<StoredFact[]> {
    const rows = await this.dataSource.query<FactSqlRow[]>(
      `SELECT ${COLUMNS} FROM memory_facts f
       WHERE ${VISIBLE} AND f.subject_user_id = $3
       ORDER BY (f.status = 'active') DESC, f.confidence DESC, f.learned_at DESC LIMIT $4`,
      [groupId, [...shared], userId, limit],
    );
    return rows.map(toFact);
  }

  /** Every fact (any status) the group holds about these people: the merge rules' input. */
  async known(groupId: string, subjectIds: readonly string[]): Promise<KnownFact[]> {
    if (subjectIds.length === 0) return [];
    const rows = await this.dataSource.query<FactSqlRow[]>(
      `SELECT ${COLUMNS} FROM memory_facts f WHERE f.group_id = $1 AND f.subject_user_id = ANY($2::text[])`,
      [groupId, [...subjectIds]],
    );
    return rows.map(toFact);
  }
}
