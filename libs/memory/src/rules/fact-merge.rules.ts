import { createHash } from 'node:crypto';
import type { FactCategory, FactStatus, MemoryFactLearnedPayload } from '@app/contracts';

/*
 * Social memory's write rules (ADR-0016): dedup, conflict, confidence. Pure: the extracted candidate and the
 * facts already known about the subject in, the fact events to record out.
 */

/** A fact as the extraction produced it, after the evidence rules (never the bot's own words). */
export interface FactCandidate {
  subjectUserId: string;
  subjectName: string;
  category: FactCategory;
  key: string;
  value: string;
  relatedUserId?: string;
  /** 0–1, after the hearsay discount. */
  confidence: number;
}

/** A fact already known (as the read model holds it). */
export interface KnownFact {
  factId: string;
  subjectUserId: string;
  category: FactCategory;
  key: string;
  value: string;
  status: FactStatus;
  confidence: number;
  revision: number;
  sightings: number;
}

/** Categories where one key holds one value: a new value for 专业 replaces or disputes the old. */
export const SINGLE_VALUED: ReadonlySet<FactCategory> = new Set(['profile']);

/** Confidence a fact must reach to replace a conflicting one outright (else it is recorded as disputed). */
const REPLACE_MARGIN = 0.1;

export function normaliseKey(key: string): string {
  return key.trim().toLowerCase().replace(/\s+/g, '');
}

/** Values compare without spaces, punctuation and case: "火锅！" and "火锅" are one value. */
export function normaliseValue(value: string): string {
  return value
    .toLowerCase()
    .replace(/[\s\p{P}\p{S}]+/gu, '')
    .trim();
}

export function factIdFor(groupId: string, subjectUserId: string, key: string, value: string): string {
  const digest = createHash('sha256')
    .update(`${groupId}\u0000${subjectUserId}\u0000${normaliseKey(key)}\u0000${normaliseValue(value)}`)
    .digest('hex');
  return `f_${digest.slice(0, 24)}`;
}

/** Two independent sightings make a fact surer: 1 − (1 − a)(1 − b), kept below 0.99. */
export function reinforce(a: number, b: number): number {
  return Math.min(0.99, Math.round((1 - (1 - a) * (1 - b)) * 1000) / 1000);
}

/** What to record for one candidate, given what is known about its subject in the group. */
export function mergeFact(
  groupId: string,
  candidate: FactCandidate,
  known: readonly KnownFact[],
  learnedAt: string,
): MemoryFactLearnedPayload {
  const factId = factIdFor(groupId, candidate.subjectUserId, candidate.key, candidate.value);
  const key = normaliseKey(candidate.key);
  const base = {
    factId,
    subjectUserId: candidate.subjectUserId,
    subjectName: candidate.subjectName,
    category: candidate.category,
    key: candidate.key.trim(),
    value: candidate.value.trim(),
    ...(candidate.relatedUserId !== undefined ? { relatedUserId: candidate.relatedUserId } : {}),
    learnedAt,
  };
  const same = known.find((f) => f.factId === factId);
  if (same) {
    return {
      ...base,
      confidence: reinforce(same.confidence, candidate.confidence),
      // Seen again: a superseded or disputed fact comes back as the current one.
      status: 'active',
      revision: same.revision + 1,
      sightings: same.sightings + 1,
      ...(same.status !== 'active' ? replacing(known, same, key, candidate) : {}),
    };
  }
  const rival = SINGLE_VALUED.has(candidate.category)
    ? known.find((f) => f.status === 'active' && f.category === candidate.category && normaliseKey(f.key) === key)
    : undefined;
  if (rival && candidate.confidence + REPLACE_MARGIN < rival.confidence) {
    return { ...base, confidence: candidate.confidence, status: 'disputed', revision: 1, sightings: 1 };
  }
  return {
    ...base,
    confidence: candidate.confidence,
    status: 'active',
    revision: 1,
    sightings: 1,
    ...(rival ? { replacesFactId: rival.factId } : {}),
  };
}

function replacing(
  known: readonly KnownFact[],
  self: KnownFact,
  key: string,
  candidate: FactCandidate,
): { replacesFactId?: string } {
  if (!SINGLE_VALUED.has(candidate.category)) return {};
  const rival = known.find(
    (f) =>
      f.factId !== self.factId &&
      f.status === 'active' &&
      f.category === candidate.category &&
      normaliseKey(f.key) === key,
  );
  return rival ? { replacesFactId: rival.factId } : {};
}

/**
 * Apply merged facts to the known list, so several candidates of one extraction see each other (the second
 * "专业" of a chunk conflicts with the first, not with the stale read model).
 */
export function applyMerged(known: KnownFact[], merged: MemoryFactLearnedPayload): KnownFact[] {
  const next = known
    .filter((f) => f.factId !== merged.factId)
    .map((f) => (f.factId === merged.replacesFactId ? { ...f, status: 'superseded' as const } : f));
  next.push({
    factId: merged.factId,
    subjectUserId: merged.subjectUserId,
    category: merged.category,
    key: merged.key,
    value: merged.value,
    status: merged.status,
    confidence: merged.confidence,
    revision: merged.revision,
    sightings: merged.sightings,
  });
  return next;
}
