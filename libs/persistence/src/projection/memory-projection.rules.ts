import { EventKind, type EventEnvelope, type EventOf, type MessagePayload } from '@app/contracts';
import type { FactRow, JargonRow, MemoryMessageRow, SummaryRow } from './memory.rows.js';
import { searchTerms } from './search-terms.js';

/** What the memory fold writes, one patch at a time (the projection's `put`). */
export interface MemoryPatches {
  memoryMessages(patch: Partial<MemoryMessageRow>): void;
  summaries(patch: Partial<SummaryRow>): void;
  facts(patch: Partial<FactRow>): void;
  jargon(patch: Partial<JargonRow>): void;
}

/** A message someone sent (`message.observed|direct`) as searchable event memory. */
export function foldMessageMemory(event: EventEnvelope<MessagePayload>, out: MemoryPatches): void {
  const p = event.payload;
  out.memoryMessages({
    eventId: event.id,
    groupId: event.groupId,
    threadId: event.threadId ?? null,
    userId: p.sender.userId,
    displayName: p.sender.displayName,
    fromSelf: p.sender.userId === p.selfId,
    sentAt: new Date(p.sentAt * 1000),
    text: p.text,
    terms: searchTerms(p.text),
  });
}

/** A message the bot sent (`message.sent`): searchable too, marked as the bot's own (never a source of facts). */
export function foldSentMemory(
  event: EventOf<'message.sent'>,
  selfId: string,
  selfName: string | null,
  out: MemoryPatches,
): void {
  out.memoryMessages({
    eventId: event.id,
    groupId: event.groupId,
    threadId: event.threadId ?? null,
    userId: selfId,
    displayName: selfName,
    fromSelf: true,
    sentAt: new Date(event.createdAt),
    text: event.payload.text,
    terms: searchTerms(event.payload.text),
  });
}

/** Fold one `memory.*` event into summary, fact and jargon rows. */
export type MemoryKind = 'memory.summary.written' | 'memory.fact.learned' | 'memory.jargon.learned';

export function foldMemoryEvent(event: EventOf<MemoryKind>, out: MemoryPatches): void {
  const at = new Date(event.createdAt);
  switch (event.kind) {
    case EventKind.MemorySummaryWritten: {
      const p = (event as EventOf<'memory.summary.written'>).payload;
      out.summaries({
        summaryId: p.summaryId,
        groupId: event.groupId,
        threadId: p.threadId,
        reason: p.reason,
        summary: p.summary,
        throughOrdinal: p.throughOrdinal,
        messageCount: p.messageCount,
        participantIds: [...p.participantIds],
        lastMessageAt: new Date(p.lastMessageAt),
        writtenAt: at,
        terms: searchTerms(p.summary),
      });
      return;
    }
    case EventKind.MemoryFactLearned: {
      const p = (event as EventOf<'memory.fact.learned'>).payload;
      const learnedAt = new Date(p.learnedAt);
      out.facts({
        factId: p.factId,
        groupId: event.groupId,
        subjectUserId: p.subjectUserId,
        subjectName: p.subjectName,
        category: p.category,
        key: p.key,
        value: p.value,
        relatedUserId: p.relatedUserId ?? null,
        firstLearnedAt: p.revision === 1 ? learnedAt : null,
        terms: searchTerms(`${p.subjectName} ${p.key} ${p.value}`),
        status: p.status,
        confidence: p.confidence,
        revision: p.revision,
        sightings: p.sightings,
        replacedBy: null,
        learnedAt,
        version: learnedAt.getTime(),
      });
      if (p.replacesFactId !== undefined) {
        // The replaced fact keeps its text; only its live columns move, versioned by this learning's time.
        out.facts({
          factId: p.replacesFactId,
          status: 'superseded',
          replacedBy: p.factId,
          version: learnedAt.getTime(),
        });
      }
      return;
    }
    case EventKind.MemoryJargonLearned: {
      const p = (event as EventOf<'memory.jargon.learned'>).payload;
      out.jargon({
        groupId: event.groupId ?? '',
        term: p.term,
        status: p.status,
        meaning: p.meaning,
        sightings: p.sightings,
        users: p.users,
        learnedAt: at,
      });
      return;
    }
  }
}
