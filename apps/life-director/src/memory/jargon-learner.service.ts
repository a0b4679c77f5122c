import { Injectable, Logger } from '@nestjs/common';
import { EventKind, makeEvent, PRIORITY } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { ChatModel } from '@app/llm';
import {
  jargonCandidates,
  jargonMessages,
  JargonRepository,
  JUDGE_JARGON_TOOL,
  MemoryBudget,
  parseJargonVerdicts,
} from '@app/memory';
import { Clock, QunliConfig } from '@app/platform';
import { JargonMeaningsJob, type JargonScanJob } from './memory-jobs.js';
import { MemoryQueues } from './memory-queues.js';

/** How far back sightings count. */
const SIGHTING_WINDOW_MS = 30 * 86_400_000;
const CANDIDATES_PER_SCAN = 3;
const EXAMPLES = 8;

/**
 * Jargon (ADR-0016): sightings are counted from event memory (people only, at least two of them); a word used
 * enough, and much more here than elsewhere, is judged once by the utils model: jargon with a meaning, or ordinary.
 * A scan's words go to the model together, in one call.
 */
@Injectable()
export class JargonLearner {
  private readonly logger = new Logger(JargonLearner.name);

  constructor(
    private readonly jargon: JargonRepository,
    private readonly budget: MemoryBudget,
    private readonly chat: ChatModel,
    private readonly eventLog: EventLog,
    private readonly queues: MemoryQueues,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
  ) {}

  /** `scanId` (the scan job's id) names the meanings job, so a retried scan adds nothing and the next one asks again. */
  async scan(job: JargonScanJob, scanId: string): Promise<string[]> {
    const since = new Date(this.clock.nowMs() - SIGHTING_WINDOW_MS);
    const [uses, volume] = await Promise.all([
      this.jargon.candidates(job.groupId, since, this.config.QUNLI_JARGON_MIN_SIGHTINGS, 100),
      this.jargon.volume(job.groupId, since),
    ]);
    const picked = jargonCandidates(uses, volume, CANDIDATES_PER_SCAN);
    if (picked.length > 0) {
      await this.queues.jargonMeanings(
        scanId,
        JargonMeaningsJob.create({
          groupId: job.groupId,
          terms: picked.map((use) => ({ term: use.word, sightings: use.docs, users: use.users })),
        }),
      );
    }
    return picked.map((p) => p.word);
  }

  /**
   * Judges a scan's words in one utils call (ADR 0051). A word the answer leaves out, or answers unusably, is not
   * recorded, so a later scan asks about it again; an answer with no usable verdict is an error, and the job retries.
   * Returns the retry time when the group's budget is spent.
   */
  async judge(job: JargonMeaningsJob): Promise<{ deferredUntil?: Date; status?: string }> {
    if (this.chat.kind === 'offline') return { status: 'offline' };
    const found = await Promise.all(
      job.terms.map(async (t) => ({ ...t, examples: await this.jargon.examples(job.groupId, t.term, EXAMPLES) })),
    );
    const asked = found.filter((t) => t.examples.length > 0);
    if (asked.length === 0) return { status: 'no_examples' };
    const reservation = await this.budget.reserve(job.groupId, 'jargon');
    if (!reservation.granted) return { deferredUntil: reservation.retryAt };
    let response;
    try {
      response = await this.chat.complete({
        role: 'utils',
        messages: jargonMessages(asked.map((t) => ({ term: t.term, examples: t.examples.map((e) => e.text) }))),
        tools: [JUDGE_JARGON_TOOL],
        toolChoice: 'required',
      });
    } catch (error) {
      this.budget.counted('jargon', 'failed');
      await reservation.settle(0, 0);
      throw error;
    }
    await reservation.settle(response.usage.promptTokens, response.usage.completionTokens);
    const call = response.toolCalls.find((c) => c.name === JUDGE_JARGON_TOOL.name);
    const parsed = call
      ? parseJargonVerdicts(
          call.arguments,
          asked.map((t) => t.term),
        )
      : null;
    if (!parsed || parsed.verdicts.length === 0) {
      this.budget.counted('jargon', 'invalid');
      throw new Error(
        `MEMORY.JARGON_INVALID: the utils model gave no usable judge_jargon verdict for ${asked.map((t) => t.term).join(', ')}`,
      );
    }
    const unjudged = asked.length - parsed.verdicts.length;
    this.budget.counted('jargon', unjudged > 0 || parsed.unusable > 0 ? 'partial' : 'ok');
    const byTerm = new Map(asked.map((t) => [t.term, t]));
    const now = this.clock.now();
    await this.eventLog.appendAll(
      parsed.verdicts.map((verdict) => {
        const term = byTerm.get(verdict.term)!;
        return makeEvent({
          kind: EventKind.MemoryJargonLearned,
          groupId: job.groupId,
          source: 'life-director',
          priority: PRIORITY.background,
          createdAt: now,
          evidenceMessageIds: term.examples.map((e) => e.eventId),
          payload: {
            term: verdict.term,
            status: verdict.isJargon ? 'learned' : 'rejected',
            meaning: verdict.meaning,
            sightings: term.sightings,
            users: term.users,
          },
        });
      }),
    );
    const learned = parsed.verdicts.filter((v) => v.isJargon).length;
    if (unjudged > 0 || parsed.unusable > 0) {
      this.logger.debug(`jargon: ${unjudged} words left for a later scan, ${parsed.unusable} verdicts unusable`);
    }
    return { status: `learned:${learned},rejected:${parsed.verdicts.length - learned},unjudged:${unjudged}` };
  }
}
