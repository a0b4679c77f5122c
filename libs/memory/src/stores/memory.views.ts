import type { DisclosureLevel, JargonStatus } from '@app/contracts';
import type { KnownFact } from '../rules/fact-merge.rules.js';

/** What memory's repositories hand out: plain data, so decision code can read it without the adapters. */

/** A message found in event memory. */
export interface RecalledMessage {
  eventId: string;
  userId: string;
  displayName: string;
  fromSelf: boolean;
  sentAt: Date;
  text: string;
  rank: number;
}

export interface StoredFact extends KnownFact {
  groupId: string;
  subjectName: string;
  relatedUserId: string | null;
  learnedAt: Date;
  rank: number;
}

export interface WordUse {
  word: string;
  /** Messages of the group using it (people only). */
  docs: number;
  users: number;
  /** Messages of other groups using it. */
  elsewhere: number;
}

export interface StoredJargon {
  term: string;
  status: JargonStatus;
  meaning: string;
  sightings: number;
}

export interface StoredSummary {
  summaryId: string;
  threadId: string;
  summary: string;
  throughOrdinal: number;
  lastMessageAt: Date;
}

export interface AgendaView {
  personaId: string;
  mood: string;
  timezone: string;
  defaultDisclosure: DisclosureLevel;
  groupDisclosure: Record<string, DisclosureLevel>;
  goals: { id: string; title: string; description: string }[];
}

export interface ActivityView {
  id: string;
  title: string;
  description: string;
  detail: string | null;
  startedAt: Date;
  expectedDurationMinutes: number;
  status: string;
  phase: string | null;
  private: boolean;
  phases: { name: string; until: number }[];
  mood: string | null;
  goalId: string | null;
  nextTitle: string | null;
  nextAt: Date | null;
  completedAt: Date | null;
}
