/** Read-model rows of the keyword lexicon (ADR-0001 §7.1, ADR-0020): sets, terms, and the hits decisions recorded. */

export interface KeywordSetRow {
  scope: string;
  ownerId: string;
  version: number | null;
  /** Terms that can hit (active and pinned) as of `version`. */
  terms: number | null;
  updatedAt: Date | null;
}

export interface KeywordTermRow {
  termId: string;
  scope: string | null;
  ownerId: string | null;
  text: string | null;
  aliases: string[] | null;
  weight: number | null;
  confidence: number | null;
  source: string | null;
  /** active | pinned | suppressed, or `removed` once expired, evicted or deleted. */
  status: string | null;
  sightings: number | null;
  firstSeenAt: Date | null;
  lastSeenAt: Date | null;
  expiresAt: Date | null;
  lastChange: string | null;
  reason: string | null;
  changedAt: Date | null;
  /** The set version of the change; the term's mutable columns move together with it. */
  version: number | null;
}

export interface KeywordHitRow {
  eventId: string;
  termId: string;
  groupId: string | null;
  threadId: string | null;
  term: string | null;
  scope: string | null;
  weight: number | null;
  outcome: string | null;
  matchedAt: Date | null;
}
