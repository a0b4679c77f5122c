import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { EventKind, makeEvent, PRIORITY, QunliError, type EventEnvelope } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { ChatModel } from '@app/llm';
import {
  applyMerged,
  extractionMessages,
  ExtractionInvalid,
  FactsRepository,
  mergeFact,
  MemoryBudget,
  parseExtraction,
  RECORD_MEMORY_TOOL,
  SummariesRepository,
  ThreadBufferStore,
  type KnownFact,
} from '@app/memory';
import { Clock, QunliConfig } from '@app/platform';
import { MemoryQueues } from './memory-queues.js';
import type { ThreadSummaryJob } from './memory-jobs.js';

const SOURCE = 'life-director';
/** An idle thread with fewer lines than this is left to a later chunk: one line is not worth a call. */
const MIN_IDLE_LINES = 3;

export type SummaryOutcome =
  | { kind: 'written'; facts: number; dropped: number; tokens: number }
  | { kind: 'skipped'; reason: 'already' | 'superseded' | 'too_few' | 'no_people' | 'offline' }
  | { kind: 'deferred'; until: Date };

/** The handler ran before its commit landed: try again shortly. */
export class ThreadNotCommitted extends QunliError {
  constructor(threadId: string, through: number, seen: number) {
    super('MEMORY.THREAD_NOT_COMMITTED', `thread ${threadId} has ${seen} messages, the job covers ${through}`, {
      threadId,
      through,
      seen,
    });
  }
}

/**
 * Thread memory and social memory in one utils-model call (ADR-0016): the chunk's lines plus the previous summary
 * in, a new running summary and facts about people out; facts merged with what is known (dedup, conflict,
 * confidence), recorded as events in the same MULTI that marks the chunk summarised.
 */
@Injectable()
export class ThreadSummarizer {
  private readonly logger = new Logger(ThreadSummarizer.name);

  constructor(
    private readonly buffers: ThreadBufferStore,
    private readonly summaries: SummariesRepository,
    private readonly facts: FactsRepository,
    private readonly budget: MemoryBudget,
    private readonly chat: ChatModel,
    private readonly eventLog: EventLog,
    private readonly queues: MemoryQueues,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
  ) {}

  async summarize(job: ThreadSummaryJob): Promise<SummaryOutcome> {
    const { groupId, threadId, through, reason } = job;
    const state = await this.buffers.state(groupId, threadId);
    if (state.summarized >= through) return { kind: 'skipped', reason: 'already' };
    if (state.ordinal < through) throw new ThreadNotCommitted(threadId, through, state.ordinal);
    if (reason === 'idle' && state.ordinal > through) return { kind: 'skipped', reason: 'superseded' };
    const cap = 3 * this.config.QUNLI_MEMORY_SUMMARY_EVERY;
    const lines = (await this.buffers.lines(groupId, threadId, state.summarized, through)).slice(-cap);
    const people = lines.filter((l) => !l.fromSelf);
    if (people.length === 0 || (reason === 'idle' && lines.length < MIN_IDLE_LINES)) {
      if (people.length === 0) await this.markOnly(groupId, threadId, through);
      return { kind: 'skipped', reason: people.length === 0 ? 'no_people' : 'too_few' };
    }

    if (this.chat.kind === 'offline') {
      // No model configured: event memory still works; there is nothing that could summarise these lines.
      await this.markOnly(groupId, threadId, through);
      return { kind: 'skipped', reason: 'offline' };
    }
    const reservation = await this.budget.reserve(groupId, 'summary');
    if (!reservation.granted) return { kind: 'deferred', until: reservation.retryAt };
    const previous = await this.summaries.latest(groupId, threadId);
    let response;
    try {
      response = await this.chat.complete({
        role: 'utils',
        messages: extractionMessages(lines, previous?.summary ?? null),
        tools: [RECORD_MEMORY_TOOL],
        toolChoice: 'required',
      });
    } catch (error) {
      this.budget.counted('summary', 'failed');
      await reservation.settle(0, 0);
      throw error;
    }
    await reservation.settle(response.usage.promptTokens, response.usage.completionTokens);
    const call = response.toolCalls.find((c) => c.name === RECORD_MEMORY_TOOL.name);
    let extraction;
    try {
      if (!call)
        throw new ExtractionInvalid(
          `no ${RECORD_MEMORY_TOOL.name} call (got ${response.toolCalls.map((c) => c.name).join(', ') || 'text'})`,
        );
      extraction = parseExtraction(call.arguments, lines, this.config.QUNLI_SELF_ID ?? 'self');
    } catch (error) {
      this.budget.counted('summary', 'invalid');
      throw error;
    }
    this.budget.counted('summary', 'ok');

    const now = this.clock.now();
    const learnedAt = now.toISOString();
    let known: KnownFact[] = await this.facts.known(groupId, [
      ...new Set(extraction.facts.map((f) => f.subjectUserId)),
    ]);
    const events: EventEnvelope[] = [];
    const participants = [...new Set(people.map((l) => l.userId))];
    const last = lines[lines.length - 1]!;
    events.push(
      makeEvent({
        kind: EventKind.MemorySummaryWritten,
        groupId,
        threadId,
        source: SOURCE,
        priority: PRIORITY.background,
        createdAt: now,
        actorIds: participants.slice(0, 64),
        evidenceMessageIds: people.map((l) => l.eventId).slice(-256),
        payload: {
          summaryId: `s_${createHash('sha256').update(`${groupId}\u0000${threadId}\u0000${through}`).digest('hex').slice(0, 24)}`,
          threadId,
          reason,
          summary: extraction.summary,
          throughOrdinal: through,
          messageCount: lines.length,
          participantIds: participants,
          lastMessageAt: new Date(last.sentAt).toISOString(),
        },
      }),
    );
    for (const fact of extraction.facts) {
      const merged = mergeFact(groupId, fact, known, learnedAt);
      known = applyMerged(known, merged);
      events.push(
        makeEvent({
          kind: EventKind.MemoryFactLearned,
          groupId,
          threadId,
          source: SOURCE,
          priority: PRIORITY.background,
          createdAt: now,
          actorIds: [fact.subjectUserId, ...(fact.relatedUserId ? [fact.relatedUserId] : [])],
          evidenceMessageIds: fact.evidenceEventIds,
          payload: merged,
        }),
      );
    }
    await this.eventLog.appendAll(events, (tx) => this.buffers.markSummarized(tx, groupId, threadId, through));
    if (extraction.dropped.length > 0) {
      this.logger.debug(`dropped facts: ${extraction.dropped.map((d) => d.reason).join(', ')}`);
    }
    await this.queues.jargonScan(groupId);
    return {
      kind: 'written',
      facts: extraction.facts.length,
      dropped: extraction.dropped.length,
      tokens: response.usage.promptTokens + response.usage.completionTokens,
    };
  }

  private async markOnly(groupId: string, threadId: string, through: number): Promise<void> {
    const tx = this.buffers.multi();
    this.buffers.markSummarized(tx, groupId, threadId, through);
    await tx.exec();
  }
}
