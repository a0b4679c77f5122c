import { EventKind, type EventOf } from '@app/contracts';
import type { KeywordHitRow, KeywordSetRow, KeywordTermRow } from './keyword.rows.js';

/** What the keyword fold writes, one patch at a time (the projection's `put`). */
export interface KeywordPatches {
  keywordSets(patch: Partial<KeywordSetRow>): void;
  keywordTerms(patch: Partial<KeywordTermRow>): void;
  keywordHits(patch: Partial<KeywordHitRow>): void;
}

const REMOVED = new Set(['expired', 'evicted', 'deleted']);

export type KeywordKind = 'keyword.term.changed' | 'keyword.lexicon.versioned' | 'keyword.control.requested';

/** Fold one `keyword.*` event. A term change is a snapshot: the row becomes it, unless a later version is there. */
export function foldKeywordEvent(event: EventOf<KeywordKind>, out: KeywordPatches): void {
  const at = new Date(event.createdAt);
  switch (event.kind) {
    case EventKind.KeywordTermChanged: {
      const p = (event as EventOf<'keyword.term.changed'>).payload;
      out.keywordTerms({
        termId: p.termId,
        scope: p.scope,
        ownerId: p.ownerId,
        text: p.text,
        firstSeenAt: new Date(p.firstSeenAt),
        aliases: [...p.aliases],
        weight: p.weight,
        confidence: p.confidence,
        source: p.source,
        status: REMOVED.has(p.change) ? 'removed' : p.status,
        sightings: p.sightings,
        lastSeenAt: new Date(p.lastSeenAt),
        expiresAt: p.expiresAt === undefined ? null : new Date(p.expiresAt),
        lastChange: p.change,
        reason: p.reason,
        changedAt: at,
        version: p.version,
      });
      return;
    }
    case EventKind.KeywordLexiconVersioned: {
      const p = (event as EventOf<'keyword.lexicon.versioned'>).payload;
      out.keywordSets({ scope: p.scope, ownerId: p.ownerId, version: p.version, terms: p.terms, updatedAt: at });
      return;
    }
    case EventKind.KeywordControlRequested:
      // The request itself stays in event_log; what it changed arrives as `keyword.term.changed`.
      return;
  }
}

/** The hits a decision recorded (`decision.made` keywordHits): one row per event and term. */
export function foldDecisionHits(event: EventOf<'decision.made'>, out: KeywordPatches): void {
  const p = event.payload;
  for (const hit of p.keywordHits ?? []) {
    out.keywordHits({
      eventId: p.subjectEventId,
      termId: hit.termId,
      groupId: event.groupId,
      threadId: p.threadId ?? null,
      term: hit.term,
      scope: hit.scope,
      weight: hit.weight,
      outcome: p.outcome,
      matchedAt: new Date(event.createdAt),
    });
  }
}
