import { performance } from 'node:perf_hooks';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  actionIdFor,
  EventKind,
  makeEvent,
  PRIORITY,
  QunliError,
  type EpisodeAction,
  type EpisodeJob,
  type EpisodeOutcome,
  type EpisodeStepPayload,
  type EventEnvelope,
  type EventOf,
} from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { effectivePersona, PersonaPolicy } from '@app/persona';
import { Clock, Metrics, QunliConfig, REDIS } from '@app/platform';
import { ChatModel, type ChatMessage, type ChatResponse } from '@app/llm';
import { buildEpisodePrompt, correctionPrompt } from '../prompt/episode.prompt.js';
import { episodeMetrics, type EpisodeMetrics } from './episode.metrics.js';
import { decideToolCall, EPISODE_TOOLS, parseArguments, type ToolCallDecision } from './tool-call.rules.js';

/** LLM calls one episode may make: the first answer plus two corrections. */
export const MAX_STEPS = 3;

/** How long the done marker outlives the episode: longer than any redelivery of its job. */
export const DONE_MARKER_TTL_SECONDS = 7 * 86400;

const ROLE = 'replyer';
const SOURCE = 'cognition';

export interface EpisodeResult {
  /** `duplicate`: the outcome was recorded by an earlier delivery of the job; nothing was done. */
  outcome: EpisodeOutcome | 'duplicate';
  steps: number;
  actionId?: string;
  error?: { code: string; message: string };
}

type Finish =
  | { kind: 'replied'; text: string; quote: boolean; stepIndex: number }
  | { kind: 'no_reply'; reason: string }
  | { kind: 'failed'; error: QunliError };

interface Tally {
  steps: EventOf<'episode.step'>[];
  tokensIn: number;
  tokensOut: number;
}

/**
 * One episode (ADR §8): a short ReAct loop that ends in a reply, a decision not to reply, or a failure. The
 * outcome, its send action and the episode's done marker commit in one MULTI, so a redelivered job either finds
 * the marker and does nothing, or finds nothing committed and runs again (the action id is deterministic, so
 * outbound's ledger still sends it once).
 *
 * Model failures end the episode as `failed` (the job completes; retrying a broken model helps nobody). Redis
 * failures throw, so BullMQ retries the job.
 */
@Injectable()
export class EpisodeRunner {
  private readonly logger = new Logger(EpisodeRunner.name);
  private readonly metrics: EpisodeMetrics;

  constructor(
    private readonly model: ChatModel,
    private readonly eventLog: EventLog,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: QunliConfig,
    private readonly persona: PersonaPolicy,
    private readonly clock: Clock,
    metrics: Metrics,
  ) {
    this.metrics = episodeMetrics(metrics);
  }

  async run(job: EpisodeJob, attempt: number): Promise<EpisodeResult> {
    const keys = this.eventLog.keys;
    const partition = keys.partitionOf(job.groupId);
    const doneKey = keys.episodeDone(partition, job.episodeId);
    if ((await this.redis.exists(doneKey)) === 1) {
      this.metrics.redeliveries.inc();
      return { outcome: 'duplicate', steps: 0 };
    }

    const began = performance.now();
    const startedAt = this.clock.now();
    // The episode's own budget bounds real LLM latency, so it is not time-scaled; the job's deadline (set by the
    // scheduler) may end it sooner when the message is getting stale.
    const ownDeadline = startedAt.getTime() + this.config.QUNLI_EPISODE_TIMEOUT_MS;
    const jobDeadline = Date.parse(job.deadline);
    const deadline = new Date(Number.isNaN(jobDeadline) ? ownDeadline : Math.min(ownDeadline, jobDeadline));
    const modelName = this.model.modelFor(ROLE);

    await this.eventLog.append(
      this.event(job, EventKind.EpisodeStarted, {
        episodeId: job.episodeId,
        triggerEventId: job.trigger.id,
        model: modelName,
        deadline: deadline.toISOString(),
        maxSteps: MAX_STEPS,
        attempt,
      }),
    );

    const tally: Tally = { steps: [], tokensIn: 0, tokensOut: 0 };
    const target = targetOf(job);
    const finish: Finish = target
      ? await this.think(job, deadline, modelName, tally)
      : {
          kind: 'failed',
          error: new QunliError('EPISODE.INVALID_JOB', 'a group message without a group id', {
            episodeId: job.episodeId,
          }),
        };

    const events: EventEnvelope[] = [...tally.steps];
    let actionId: string | undefined;
    if (finish.kind === 'replied' && target) {
      actionId = actionIdFor(job.episodeId, finish.stepIndex);
      events.push(this.sendAction(job, target, actionId, finish.text, finish.quote));
    }
    const error = finish.kind === 'failed' ? { code: finish.error.code, message: finish.error.message } : undefined;
    const durationMs = performance.now() - began;
    events.push(
      this.event(job, EventKind.EpisodeCompleted, {
        episodeId: job.episodeId,
        triggerEventId: job.trigger.id,
        outcome: finish.kind,
        ...(error ? { error } : {}),
        steps: tally.steps.length,
        tokensIn: tally.tokensIn,
        tokensOut: tally.tokensOut,
        durationMs,
      }),
    );
    await this.eventLog.appendAll(events, (tx, p) => {
      tx.set(keys.episodeDone(p, job.episodeId), '1', 'EX', DONE_MARKER_TTL_SECONDS);
    });

    this.metrics.episodes.inc({ outcome: finish.kind });
    this.metrics.duration.observe({ outcome: finish.kind }, durationMs / 1000);
    this.metrics.steps.observe(tally.steps.length);
    if (error) this.logger.warn(`episode ${job.episodeId} failed: ${error.code} ${error.message}`);
    return {
      outcome: finish.kind,
      steps: tally.steps.length,
      ...(actionId ? { actionId } : {}),
      ...(error ? { error } : {}),
    };
  }

  private async think(job: EpisodeJob, deadline: Date, modelName: string, tally: Tally): Promise<Finish> {
    const remaining = deadline.getTime() - this.clock.now().getTime();
    if (remaining <= 0) return { kind: 'failed', error: deadlineExceeded(deadline) };

    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), remaining);
    try {
      const messages: ChatMessage[] = buildEpisodePrompt({
        persona: effectivePersona(this.persona, job.groupId),
        selfId: job.trigger.payload.selfId,
        groupId: job.groupId,
        trigger: job.trigger.payload,
        context: job.context,
        activity: null,
        now: this.clock.now(),
      });
      let lastInvalid: Extract<ToolCallDecision, { ok: false }> | undefined;
      for (let index = 0; index < MAX_STEPS; index++) {
        if (abort.signal.aborted) return { kind: 'failed', error: deadlineExceeded(deadline) };
        const began = performance.now();
        let response: ChatResponse;
        try {
          response = await this.model.complete({
            role: ROLE,
            messages,
            tools: EPISODE_TOOLS,
            toolChoice: 'required',
            signal: abort.signal,
            subjectText: job.trigger.payload.text,
          });
        } catch (caught) {
          const latencyMs = performance.now() - began;
          if (!(caught instanceof QunliError)) throw caught;
          const error = caught.code === 'LLM.ABORTED' && abort.signal.aborted ? deadlineExceeded(deadline) : caught;
          this.countCall(modelName, error.code, latencyMs);
          tally.steps.push(
            this.step(
              job,
              { index, observation: { ok: false, summary: error.message, errorCode: error.code } },
              latencyMs,
            ),
          );
          return { kind: 'failed', error };
        }
        const latencyMs = performance.now() - began;
        this.countCall(modelName, 'ok', latencyMs);
        this.metrics.llmTokens.inc({ role: ROLE, model: modelName, direction: 'in' }, response.usage.promptTokens);
        this.metrics.llmTokens.inc({ role: ROLE, model: modelName, direction: 'out' }, response.usage.completionTokens);
        tally.tokensIn += response.usage.promptTokens;
        tally.tokensOut += response.usage.completionTokens;

        const decision = decideToolCall(response);
        const usage = { tokensIn: response.usage.promptTokens, tokensOut: response.usage.completionTokens };
        const thought =
          decision.ok && decision.kind === 'reply' && decision.source === 'content'
            ? undefined
            : response.content?.trim();
        const action = actionOf(decision);
        const base = { index, ...(thought ? { thought } : {}), ...(action ? { action } : {}) };
        if (decision.ok) {
          const summary =
            decision.kind === 'no_reply'
              ? `no reply: ${decision.reason}`
              : `reply accepted (${[...decision.text].length} chars${decision.source === 'content' ? ', from plain text' : ''})`;
          tally.steps.push(this.step(job, { ...base, observation: { ok: true, summary } }, latencyMs, usage));
          if (decision.kind === 'no_reply') return { kind: 'no_reply', reason: decision.reason };
          if (decision.source === 'content') this.metrics.plainTextReplies.inc();
          return { kind: 'replied', text: decision.text, quote: decision.quote, stepIndex: index };
        }
        lastInvalid = decision;
        this.metrics.invalidToolCalls.inc({ reason: decision.reason });
        tally.steps.push(
          this.step(
            job,
            { ...base, observation: { ok: false, summary: decision.message, errorCode: 'EPISODE.INVALID_TOOL_CALL' } },
            latencyMs,
            usage,
          ),
        );
        messages.push({ role: 'user', content: correctionPrompt(decision.hint) });
      }
      return {
        kind: 'failed',
        error: new QunliError(
          'EPISODE.INVALID_TOOL_CALL',
          `no usable answer in ${MAX_STEPS} LLM calls; last: ${lastInvalid?.message ?? 'none'}`,
          { reason: lastInvalid?.reason ?? null },
        ),
      };
    } finally {
      clearTimeout(timer);
    }
  }

  private countCall(model: string, outcome: string, latencyMs: number): void {
    this.metrics.llmCalls.inc({ role: ROLE, model, outcome });
    this.metrics.llmDuration.observe({ role: ROLE, model, outcome }, latencyMs / 1000);
  }

  private step(
    job: EpisodeJob,
    fields: Pick<EpisodeStepPayload, 'index' | 'thought' | 'action' | 'observation'>,
    latencyMs: number,
    usage = { tokensIn: 0, tokensOut: 0 },
  ): EventOf<'episode.step'> {
    return this.event(job, EventKind.EpisodeStep, { episodeId: job.episodeId, ...fields, ...usage, latencyMs });
  }

  private sendAction(
    job: EpisodeJob,
    target: Target,
    actionId: string,
    text: string,
    quote: boolean,
  ): EventOf<'action.send'> {
    return this.event(
      job,
      EventKind.ActionSend,
      {
        actionId,
        episodeId: job.episodeId,
        triggerEventId: job.trigger.id,
        ...target,
        text,
        ...(quote ? { quoteMessageId: job.trigger.payload.messageId } : {}),
      },
      PRIORITY.action,
    );
  }

  private event<K extends EventKind>(
    job: EpisodeJob,
    kind: K,
    payload: EventOf<K>['payload'],
    priority?: number,
  ): EventOf<K> {
    return makeEvent({
      kind,
      groupId: job.groupId,
      payload,
      source: SOURCE,
      cause: job.trigger,
      ...(job.trigger.threadId !== undefined ? { threadId: job.trigger.threadId } : {}),
      actorIds: [job.trigger.payload.sender.userId],
      evidenceMessageIds: [job.trigger.id],
      priority: priority ?? job.trigger.priority,
      createdAt: this.clock.now(),
    });
  }
}

interface Target {
  targetType: 'group' | 'private';
  targetId: string;
}

/** Where the answer goes: the trigger's group, or the sender of a private message. */
function targetOf(job: EpisodeJob): Target | null {
  const trigger = job.trigger.payload;
  if (trigger.messageType === 'private') return { targetType: 'private', targetId: trigger.sender.userId };
  const groupId = job.groupId ?? job.trigger.groupId;
  return groupId ? { targetType: 'group', targetId: groupId } : null;
}

function deadlineExceeded(deadline: Date): QunliError {
  return new QunliError('EPISODE.DEADLINE_EXCEEDED', `the episode ran past its deadline ${deadline.toISOString()}`, {
    deadline: deadline.toISOString(),
  });
}

/** What the step records as its action: the tool call with its arguments as parsed, or raw when unparsable. */
function actionOf(decision: ToolCallDecision): EpisodeAction | undefined {
  if (decision.ok && decision.kind === 'reply' && decision.source === 'content') {
    return { type: 'reply', args: { text: decision.text } };
  }
  const call = decision.call;
  if (!call) return undefined;
  const parsed = parseArguments(call);
  return { type: call.name, args: parsed.ok ? parsed.value : { raw: call.arguments.slice(0, 2000) } };
}
