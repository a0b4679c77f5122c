import { Injectable, Logger } from '@nestjs/common';
import type { EventEnvelope } from '@app/contracts';
import { GroupCommit, type BatchEntry, type BatchHandler } from '@app/event-bus';
import { Clock, Metrics } from '@app/platform';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { LEARNS_FROM, LearningBatch, learningInput, type LearningInput } from './learning-batch.js';
import { DEFAULT_LEXICON_POLICY, type LexiconPolicy } from './lexicon.rules.js';

/** Events learned per read-fold-commit: bounds one commit script's size (a batch of the bus is ≤ 100 entries). */
const CHUNK = 250;
/** Reads a chunk may need: what its events name, what that revealed, the sets of the terms it revealed. */
const READ_ROUNDS = 3;
/** Least real time between the starts of two learnings: partitions' batches arriving meanwhile share one. */
const KEYWORDS_COMMIT_INTERVAL_MS = 20;
/** Learnings in flight at once (a conflict on a set both changed sends one back to be learned on fresh state). */
const KEYWORDS_LEARNINGS_IN_FLIGHT = 4;

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

  /**
   * The batches of this process's partition readers are learned together (ADR 0045): one read script and one commit
   * for the batches waiting when a learning starts, rather than one each. A partition hands in its next batch only
   * once its last is learned, so each partition's events are still learned in log order. Under saturation several
   * learnings run at once, each of at most one chunk, so their round trips overlap as the partitions' did.
   */
  private readonly commits = new GroupCommit<EventEnvelope>({
    write: (events) => this.learn(events),
    intervalMs: KEYWORDS_COMMIT_INTERVAL_MS,
    concurrency: KEYWORDS_LEARNINGS_IN_FLIGHT,
    maxItems: CHUNK,
  });

  handleBatch(entries: BatchEntry[]): Promise<void> {
    return this.commits.submit(entries.map((entry) => entry.event));
  }

  /**
   * Learn a partition's events in log order, in chunks (ADR 0029): each chunk reads what its events need in at most
   * `READ_ROUNDS` round trips, folds them in memory — each event sees the ones before it exactly as if they had
   * been committed — and commits once. Refused events (`KeywordError`) are counted and logged after the commit.
   */
  async learn(events: readonly EventEnvelope[]): Promise<void> {
    const inputs = events.filter((event) => LEARNS_FROM.has(event.kind)).map(learningInput);
    for (let i = 0; i < inputs.length; i += CHUNK) await this.learnChunk(inputs.slice(i, i + CHUNK));
  }

  private async learnChunk(inputs: LearningInput[]): Promise<void> {
    const batch = new LearningBatch(inputs, this.policy);
    for (let round = 1; ; round++) {
      const reads = batch.readsNeeded();
      if (!reads) break;
      if (round > READ_ROUNDS) throw new Error(`keyword batch still needs reads after ${READ_ROUNDS} rounds`);
      batch.absorb(await this.store.readBatch(reads));
    }
    for (const input of inputs) {
      if (batch.isDone(input.event.id)) continue;
      batch.learn(input, this.clock.nowMs());
    }
    const writes = batch.writes();
    if (!writes) return;
    const first = inputs[0]!.event.id;
    await this.store.commitBatch(writes, `${first} and ${inputs.length - 1} more`);
    for (const { decision } of batch.changes) {
      this.changes.inc({ change: decision.change, scope: decision.term.scope });
    }
    for (const { event, error } of batch.refusals) {
      this.rejected.inc({ code: error.code });
      this.logger.warn({ ...error.toJSON(), message: `keyword ${event.kind} ${event.id} refused: ${error.message}` });
    }
  }
}
