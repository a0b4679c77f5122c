/** Read-model rows of memory (ADR-0001 §11): searchable event memory, summaries, facts, jargon. */

export interface MemoryMessageRow {
  eventId: string;
  groupId: string | null;
  threadId: string | null;
  userId: string | null;
  displayName: string | null;
  fromSelf: boolean | null;
  sentAt: Date | null;
  text: string | null;
  terms: string | null;
}

export interface SummaryRow {
  summaryId: string;
  groupId: string | null;
  threadId: string | null;
  reason: string | null;
  summary: string | null;
  throughOrdinal: number | null;
  messageCount: number | null;
  participantIds: string[] | null;
  lastMessageAt: Date | null;
  writtenAt: Date | null;
  terms: string | null;
}

export interface FactRow {
  factId: string;
  groupId: string | null;
  subjectUserId: string | null;
  subjectName: string | null;
  category: string | null;
  key: string | null;
  value: string | null;
  relatedUserId: string | null;
  firstLearnedAt: Date | null;
  terms: string | null;
  status: string | null;
  confidence: number | null;
  revision: number | null;
  sightings: number | null;
  replacedBy: string | null;
  learnedAt: Date | null;
  version: number | null;
}

export interface JargonRow {
  groupId: string;
  term: string;
  status: string | null;
  meaning: string | null;
  sightings: number | null;
  users: number | null;
  learnedAt: Date | null;
}
