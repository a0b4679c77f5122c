import { Injectable, Logger } from '@nestjs/common';
import { EventKind, type EventEnvelope, type EventOf } from '@app/contracts';
import type { BatchEntry, BatchHandler } from '@app/event-bus';
import { Clock, Metrics } from '@app/platform';
import { agePool, type CandidatePool } from './candidate-pool.rules.js';
import { candidateWords } from './candidate-extraction.js';
import { KeywordError, KeywordErrorCode } from './keyword.errors.js';
import { emptyFeedback, followFeedback, type FeedbackInput } from './keyword-feedback.rules.js';
import {
  applyControl,
  applyFeedback,
  groupSet,
  learnFromMessage,
  learnFromSummary,
  learnJargon,
  maintainIfDue,
  threadSet,
} from './keyword-learning.js';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { keywordEvents, LexiconDraft } from './lexicon-draft.js';
import { DEFAULT_LEXICON_POLICY, setKeyOf, setRef, type LexiconPolicy } from './lexicon.rules.js';

/** The kinds the lexicon learns from; the rest of the log passes by. */
const LEARNS_FROM: ReadonlySet<string> = new Set([
  EventKind.MessageObserved,
  EventKind.MessageDirect,
  EventKind.MemorySummaryWritten,
  EventKind.MemoryJargonLearned,
  EventKind.DecisionMade,
  EventKind.ActionSend,
  EventKind.EpisodeCompleted,
  EventKind.KeywordControlRequested,
]);

/**
 * The `keywords` consumer group: reads every group stream in log order and keeps the lexicon learning: candidate
 * words of messages (promotion, reinforcement, high-frequency suppression), thread summaries, memory's jargon,
 * keyword feedback (decision → episode → reply → follow-up) and people's commands. A batch consumer, like the
 * projector: a second stream server in the scheduler app would be handed every `@EventPattern` handler of the
 * app (Nest registers handlers without a transport on every server), so the group runtime would run twice. Batch
 * handlers get the original error, so the bus's transient-versus-poison classification holds without a filter.
 */
@Injectable()
export class KeywordsConsumer implements BatchHandler {
  private readonly logger = new Logger('keywords');
  private readonly changes;
  private readonly rejected;
  private readonly policy: LexiconPolicy = DEFAULT_LEXICON_POLICY;

  constructor(
    private readonly store: KeywordLexiconStore,
    private readonly clock: Clock,
    metrics: Metrics,
  ) {
    this.changes = metrics.counter({
      name: 'qunli_keyword_changes_total',
      help: 'Keyword lexicon term changes, by change (promoted, weakened, pinned, …) and scope',
      labelNames: ['change', 'scope'],
    });
    this.rejected = metrics.counter({
      name: 'qunli_keyword_rejected_total',
      help: 'Keyword commands and learned words refused, by error code',
      labelNames: ['code'],
    });
  }

  async handleBatch(entries: BatchEntry[]): Promise<void> {
    for (const { event } of entries) {
      if (LEARNS_FROM.has(event.kind)) await this.handle(event);
    }
  }

  async handle(event: EventEnvelope): Promise<void> {
    const groupId = event.groupId;
    // A group message reads only its own words of the pool (and the total).
    const message = this.groupMessage(event);
    const words = message ? candidateWords(message.text) : [];
    const groupKeys: string[] = groupId ? [setKeyOf(groupSet(groupId))] : [];
    // What every event of a group needs, in one round trip (read even when the event turns out handled already:
    // that is a redelivery, rare, and the reads change nothing).
    const [done, feedback, groupSets, poolWords] = await Promise.all([
      this.store.isDone(event.id),
      groupId ? this.store.loadFeedback(groupId) : Promise.resolve(null),
      this.store.loadSets(groupKeys),
      message && groupId ? this.store.loadPoolWords(groupId, words) : Promise.resolve(undefined),
    ]);
    if (done) return;
    const now = this.clock.nowMs();

    // Feedback first: it says which terms (in which sets) the event settles.
    const feedbackInput = this.feedbackInput(event);
    const followed =
      groupId && feedbackInput
        ? followFeedback(feedback ?? emptyFeedback(), feedbackInput, now)
        : { state: feedback, outcomes: [] };
    const termSets = await this.store.setsOfTerms([
      ...new Set(followed.outcomes.flatMap((o) => o.hits.map((h) => h.termId))),
    ]);
    const setKeys: string[] = [...termSets.values()];

    let control: EventOf<'keyword.control.requested'>['payload'] | undefined;
    if (event.kind === EventKind.KeywordControlRequested) {
      control = (event as EventOf<'keyword.control.requested'>).payload;
      try {
        setKeys.push(setKeyOf(setRef(control.scope, control.ownerId)));
      } catch (error) {
        return this.reject(event, error);
      }
    }
    if (event.kind === EventKind.MemorySummaryWritten && groupId) {
      setKeys.push(setKeyOf(threadSet(groupId, (event as EventOf<'memory.summary.written'>).payload.threadId)));
    }

    const loaded = new Map(groupSets);
    for (const [key, set] of await this.store.loadSets(setKeys.filter((key) => !loaded.has(key)))) {
      loaded.set(key, set);
    }
    const expected = new Map([...loaded].map(([key, set]) => [key, set.meta?.version ?? 0]));
    const draft = new LexiconDraft(loaded);
    let pool: { words: CandidatePool; replace: boolean } | undefined;
    try {
      for (const outcome of followed.outcomes) {
        applyFeedback(draft, outcome.hits, outcome.signal, (id) => termSets.get(id), now, this.policy);
      }
      const kind = event.kind;
      if (message && groupId && poolWords) {
        const learned = learnFromMessage(
          draft,
          poolWords,
          { groupId, senderId: message.senderId, words },
          now,
          this.policy,
        );
        pool = { words: learned.pool, replace: false };
        if (learned.needsAging) {
          const whole = await this.store.loadPool(groupId);
          pool = {
            words: agePool({ totalDocs: learned.pool.totalDocs, words: { ...whole.words, ...learned.pool.words } }),
            replace: true,
          };
        }
        maintainIfDue(draft, groupSet(groupId), now, this.policy);
      } else if (kind === EventKind.MemorySummaryWritten && groupId) {
        const p = (event as EventOf<'memory.summary.written'>).payload;
        learnFromSummary(
          draft,
          { groupId, threadId: p.threadId, words: candidateWords(p.summary, 6) },
          now,
          this.policy,
        );
        maintainIfDue(draft, threadSet(groupId, p.threadId), now, this.policy);
      } else if (kind === EventKind.MemoryJargonLearned && groupId) {
        const p = (event as EventOf<'memory.jargon.learned'>).payload;
        if (p.status === 'learned') learnJargon(draft, { groupId, term: p.term, meaning: p.meaning }, now, this.policy);
      } else if (control) {
        const command = {
          command: control.command,
          term: control.term,
          requestedBy: control.requestedBy,
          ...(control.aliases ? { aliases: control.aliases } : {}),
          ...(control.weight !== undefined ? { weight: control.weight } : {}),
        };
        applyControl(draft, { scope: control.scope, ownerId: control.ownerId, command }, now, this.policy);
      }
    } catch (error) {
      return this.reject(event, error);
    }

    const commit = draft.commit(now);
    const feedbackMoved =
      feedbackInput !== null &&
      followed.state !== null &&
      JSON.stringify(followed.state) !== JSON.stringify(feedback ?? emptyFeedback());
    const poolMoved = pool !== undefined;
    // Most decisions, sends and completions carry no keyword hits: nothing to write, nor to remember as done
    // (handled again, they change nothing either).
    if (commit.sets.length === 0 && !feedbackMoved && !poolMoved) return;
    const events = keywordEvents(commit, event.id, event, now);
    await this.store.commit(
      event.id,
      commit,
      expected,
      events,
      groupId
        ? {
            groupId,
            ...(poolMoved ? { pool } : {}),
            ...(feedbackMoved ? { feedback: followed.state! } : {}),
          }
        : undefined,
    );
    for (const { decision } of commit.changes) {
      this.changes.inc({ change: decision.change, scope: decision.term.scope });
    }
  }

  /** A group message someone (not the bot) said: what the pool counts. */
  private groupMessage(event: EventEnvelope): { senderId: string; text: string } | null {
    if (event.kind !== EventKind.MessageObserved && event.kind !== EventKind.MessageDirect) return null;
    const p = (event as EventOf<'message.observed'>).payload;
    if (!event.groupId || p.messageType !== 'group' || p.sender.userId === p.selfId) return null;
    return { senderId: p.sender.userId, text: p.text };
  }

  private feedbackInput(event: EventEnvelope): FeedbackInput | null {
    const kind = event.kind;
    if (kind === EventKind.MessageObserved || kind === EventKind.MessageDirect) {
      const p = (event as EventOf<'message.observed'>).payload;
      return p.sender.userId === p.selfId ? null : { type: 'message', eventId: event.id, senderId: p.sender.userId };
    }
    if (kind === EventKind.DecisionMade) {
      const p = (event as EventOf<'decision.made'>).payload;
      return { type: 'decision', subjectEventId: p.subjectEventId, outcome: p.outcome, hits: p.keywordHits ?? [] };
    }
    if (kind === EventKind.ActionSend) {
      return { type: 'replied', triggerEventId: (event as EventOf<'action.send'>).payload.triggerEventId };
    }
    if (kind === EventKind.EpisodeCompleted) {
      const p = (event as EventOf<'episode.completed'>).payload;
      return { type: 'completed', triggerEventId: p.triggerEventId, outcome: p.outcome };
    }
    return null;
  }

  /** A bad command or word: counted and logged with its code, never retried (it would fail the same way). */
  private async reject(event: EventEnvelope, error: unknown): Promise<void> {
    if (!(error instanceof KeywordError) || error.code === KeywordErrorCode.Conflict) throw error;
    this.rejected.inc({ code: error.code });
    this.logger.warn({ ...error.toJSON(), message: `keyword ${event.kind} ${event.id} refused: ${error.message}` });
    await this.store.commit(event.id, { sets: [], changes: [] }, new Map(), []);
  }
}
