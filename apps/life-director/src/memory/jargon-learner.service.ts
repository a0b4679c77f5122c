import { Injectable } from '@nestjs/common';
import { EventKind, makeEvent, PRIORITY } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { ChatModel } from '@app/llm';
import {
  jargonCandidates,
  jargonMessages,
  JargonRepository,
  JUDGE_JARGON_TOOL,
  MemoryBudget,
  parseJargonVerdict,
} from '@app/memory';
import { Clock, QunliConfig } from '@app/platform';
import { JargonMeaningJob, type JargonScanJob } from './memory-jobs.js';
import { MemoryQueues } from './memory-queues.js';

/** How far back sightings count. */
const SIGHTING_WINDOW_MS = 30 * 86_400_000;
const CANDIDATES_PER_SCAN = 3;
const EXAMPLES = 8;

/**
 * Jargon (ADR-0016): sightings are counted from event memory (people only, at least two of them); a word used
 * enough, and much more here than elsewhere, is judged once by the utils model: jargon with a meaning, or ordinary.
 */
@Injectable()
export class JargonLearner {
  constructor(
    private readonly jargon: JargonRepository,
    private readonly budget: MemoryBudget,
    private readonly chat: ChatModel,
    private readonly eventLog: EventLog,
    private readonly queues: MemoryQueues,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
  ) {}

  async scan(job: JargonScanJob): Promise<string[]> {
    const since = new Date(this.clock.nowMs() - SIGHTING_WINDOW_MS);
    const [uses, volume] = await Promise.all([
      this.jargon.candidates(job.groupId, since, this.config.QUNLI_JARGON_MIN_SIGHTINGS, 100),
      this.jargon.volume(job.groupId, since),
    ]);
    const picked = jargonCandidates(uses, volume, CANDIDATES_PER_SCAN);
    for (const use of picked) {
      await this.queues.jargonMeaning(
        JargonMeaningJob.create({ groupId: job.groupId, term: use.word, sightings: use.docs, users: use.users }),
      );
    }
    return picked.map((p) => p.word);
  }

  /** Returns the retry time when the group's budget is spent. */
  async judge(job: JargonMeaningJob): Promise<{ deferredUntil?: Date; status?: string }> {
    if (this.chat.kind === 'offline') return { status: 'offline' };
    const examples = await this.jargon.examples(job.groupId, job.term, EXAMPLES);
    if (examples.length === 0) return { status: 'no_examples' };
    const reservation = await this.budget.reserve(job.groupId, 'jargon');
    if (!reservation.granted) return { deferredUntil: reservation.retryAt };
    let response;
    try {
      response = await this.chat.complete({
        role: 'utils',
        messages: jargonMessages(
          job.term,
          examples.map((e) => e.text),
        ),
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
    const verdict = call ? parseJargonVerdict(call.arguments) : null;
    if (!verdict) {
      this.budget.counted('jargon', 'invalid');
      throw new Error(`MEMORY.JARGON_INVALID: the utils model gave no usable judge_jargon call for ${job.term}`);
    }
    this.budget.counted('jargon', 'ok');
    const status = verdict.isJargon ? 'learned' : 'rejected';
    await this.eventLog.append(
      makeEvent({
        kind: EventKind.MemoryJargonLearned,
        groupId: job.groupId,
        source: 'life-director',
        priority: PRIORITY.background,
        createdAt: this.clock.now(),
        evidenceMessageIds: examples.map((e) => e.eventId),
        payload: { term: job.term, status, meaning: verdict.meaning, sightings: job.sightings, users: job.users },
      }),
    );
    return { status };
  }
}
