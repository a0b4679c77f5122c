import { performance } from 'node:perf_hooks';
import { Injectable, Logger } from '@nestjs/common';
import {
  actionIdFor,
  ANSWERED_EVENT_IDS_MAX,
  EventKind,
  PRIORITY,
  type ContextMessage,
  type EpisodeAction,
  type EpisodeControlPayload,
  type EpisodeControlRecord,
  type EpisodeJob,
  type EpisodeObservation,
  type EventEnvelope,
  type MessagePayload,
  type MessageSegment,
  type ToolResultPayload,
} from '@app/contracts';
import { effectivePersona, PersonaPolicy, type EffectivePersona } from '@app/persona';
import { Clock, Metrics, QunliConfig } from '@app/platform';
import type { ChatCallObserver, ToolCall, ToolSpec } from '@app/llm';
import { Planner, type LlmCallRecord } from '../llm/planner.js';
import { Replyer } from '../llm/replyer.js';
import {
  actionToolSpecs,
  correctionText,
  interruptNote,
  afterReplyNote,
  plannerMessages,
  plannerSituation,
  plannerSystemPrompt,
  TIMING_GATE_PROMPT,
  timingGateTools,
} from '../prompt/planner.prompt.js';
import { PromptContextService } from '../prompt/prompt-context.service.js';
import type { ProvidedSections } from '../prompt/replyer.prompt.js';
import { windowEntries, windowStart } from '../prompt/context-window.rules.js';
import { dedupThought } from '../prompt/thought-dedup.rules.js';
import { ToolRegistry } from '../tools/tool.registry.js';
import { wrapResult } from '../tools/tool-result.rules.js';
import { ToolConfirmations } from '../tools/tool-confirmations.store.js';
import { StickerSet } from '../tools/sticker-set.js';
import { PersonaVersion } from '../persona/persona-version.js';
import {
  controlEffect,
  decidePlannerAnswer,
  effectiveRole,
  interruptible,
  earlierOf,
  followUpsOf,
  limitReached,
  MAX_CORRECTIONS,
  mergeMessages,
  moveTo,
  quietOutcome,
  waitFits,
  type EpisodeEnd,
  type PlannerDecision,
} from './episode.machine.js';
import { EpisodeControlListener, type ControlInbox } from './episode-control.listener.js';
import { EpisodeEvents } from './episode-events.js';
import { episodeMetrics, type EpisodeMetrics } from './episode.metrics.js';
import type { ChatLine, EpisodeState, HistoryEntry } from './episode-state.js';
import { EpisodeStateStore } from './episode-state.store.js';
import { EventLookupStore, uuidV7Ms } from './event-lookup.store.js';

export interface EpisodeResult {
  /**
   * `duplicate`: the work was already recorded, or another worker is ahead (nothing done). `waiting`: parked
   * until a timer or a tool result. `handed_back`: stopped at shutdown for another worker to continue.
   */
  outcome: EpisodeState['outcome'] | 'duplicate' | 'waiting' | 'handed_back';
  steps: number;
  actionIds: string[];
  endedBy?: string;
  error?: { code: string; message: string };
}

/** Thrown out of a step when the episode must stop here (its result is already decided). */
class Halt extends Error {
  constructor(readonly result: EpisodeResult) {
    super(`episode halted: ${result.outcome ?? 'open'}`);
    this.name = 'Halt';
  }
}

const STOP = 'stop';
const INTERRUPT = 'interrupt';

/** One job's hold on an episode. */
interface Run {
  state: EpisodeState;
  rev: number;
  events: EpisodeEvents;
  inbox: ControlInbox;
  /** Aborted by a stop command, the deadline or shutdown: every LLM and tool call of the run listens. */
  halt: AbortController;
  /** The in-flight planner call's own controller (an interrupt aborts only this). */
  planning: AbortController | null;
  /** Monitor and `llm.called` events waiting for the next commit. */
  pending: EventEnvelope[];
  actionIds: string[];
  began: number;
  job: EpisodeJob;
  persona: EffectivePersona;
  sections: ProvidedSections;
  handBack: AbortSignal;
  /**
   * The control record as the last commit read it (`null`: none), kept for the loop's next `syncControl` only:
   * every step that goes on ends with its commit, so nothing happened between that read and the loop's.
   */
  seenAtCommit: { json: string | null } | undefined;
}

/** Planning messages for step `n`: the LLM calls it made and what they cost, summed into the step's record. */
interface StepCost {
  tokensIn: number;
  tokensOut: number;
  latencyMs: number;
  llmCalls: number;
  model?: string;
}

/**
 * Drives episodes (ADR §8) through the state machine of `episode.machine.ts`: loads or creates the episode's
 * persisted state, then step by step asks the planner, acts (reply through the replyer, tools, wait, end) and
 * commits each step with its events before the next begins. Control commands (interrupt, cancel, supersede)
 * arrive through the listener and the durable record; `wait` and asynchronous tools park the episode and end the
 * job, and a `resume` job continues it on any worker.
 */
@Injectable()
export class EpisodeRunner {
  private readonly logger = new Logger(EpisodeRunner.name);
  private readonly metrics: EpisodeMetrics;

  constructor(
    private readonly planner: Planner,
    private readonly replyer: Replyer,
    private readonly store: EpisodeStateStore,
    private readonly control: EpisodeControlListener,
    private readonly lookup: EventLookupStore,
    private readonly tools: ToolRegistry,
    private readonly confirmations: ToolConfirmations,
    private readonly prompts: PromptContextService,
    private readonly stickers: StickerSet,
    private readonly personaPolicy: PersonaPolicy,
    private readonly personaVersion: PersonaVersion,
    private readonly config: QunliConfig,
    private readonly clock: Clock,
    metrics: Metrics,
  ) {
    this.metrics = episodeMetrics(metrics);
  }

  async run(
    job: EpisodeJob,
    attempt: number,
    handBack: AbortSignal = new AbortController().signal,
  ): Promise<EpisodeResult> {
    const began = performance.now();
    // The prompt sections depend only on the job (less what a superseded episode answered), not on its persisted
    // state: they are read while the state is, and dropped unread when the job turns out to be a duplicate.
    const taking = this.withoutAnswered(job);
    const collecting = taking.then((taken) => this.sectionsFor(taken.job));
    // A duplicate leaves them unawaited: their failures (a Redis error) must not surface as unhandled there.
    taking.catch(() => undefined);
    collecting.catch(() => undefined);
    const opened = await this.store.open(job.groupId, job.episodeId);
    const loaded = opened === 'done' ? null : opened;
    if (opened === 'done' || loaded?.state.status === 'final') return this.duplicate('done');
    if (!loaded && job.mode === 'resume') {
      this.logger.warn(`resume of unknown episode ${job.episodeId}: nothing to continue`);
      return this.duplicate('unknown_episode');
    }
    const taken = await taking;
    if (taken.answered.length > 0) this.metrics.inheritedAnswered.inc(taken.answered.length);
    job = taken.job;
    const persona = effectivePersona(this.personaPolicy, job.groupId);
    const inbox = this.control.open(job.episodeId);
    const run: Run = {
      state: loaded?.state ?? this.initialState(job, persona, taken.answered),
      rev: loaded?.rev ?? 0,
      events: undefined as unknown as EpisodeEvents,
      inbox,
      halt: new AbortController(),
      planning: null,
      pending: [],
      actionIds: [],
      began,
      job,
      persona,
      sections: {},
      handBack,
      seenAtCommit: undefined,
    };
    run.events = new EpisodeEvents(run.state, () => this.clock.now());
    inbox.onCommand = (command) => this.heard(run, command);
    const onHandBack = () => run.halt.abort('hand_back');
    handBack.addEventListener('abort', onHandBack, { once: true });
    const deadlineTimer = setTimeout(
      () => run.halt.abort('deadline'),
      Math.min(this.clock.realUntil(run.state.deadline), 2_147_000_000),
    );
    try {
      run.sections = await collecting;
      if (!loaded) await this.begin(run, attempt);
      else if (run.state.status === 'awaiting_observation') {
        if (!(await this.resume(run))) return { outcome: 'waiting', steps: run.state.step, actionIds: [] };
      }
      return await this.loop(run);
    } catch (caught) {
      if (caught instanceof Halt) return caught.result;
      throw caught;
    } finally {
      clearTimeout(deadlineTimer);
      handBack.removeEventListener('abort', onHandBack);
      inbox.close();
      this.metrics.duration.observe({ outcome: run.state.outcome ?? 'open' }, (performance.now() - began) / 1000);
    }
  }

  // --- start, resume, loop ------------------------------------------------------------------------------------

  /** The prompt sections other modules provide for the job's trigger and fragments. */
  private sectionsFor(job: EpisodeJob): Promise<ProvidedSections> {
    return this.prompts.collect({
      episodeId: job.episodeId,
      groupId: job.groupId,
      selfId: job.trigger.payload.selfId,
      senderId: job.trigger.payload.sender.userId,
      senderName: job.trigger.payload.sender.displayName,
      ...(job.trigger.threadId !== undefined ? { threadId: job.trigger.threadId } : {}),
      text: [...(job.fragments ?? []).map((f) => f.payload.text), job.trigger.payload.text].join('\n'),
      now: this.clock.now(),
    });
  }

  /** `answered`: fragments taken over from a superseded episode whose replies covered them (left out of the job). */
  private initialState(job: EpisodeJob, persona: EffectivePersona, answered: string[]): EpisodeState {
    const now = this.clock.nowMs();
    // The episode's own budget bounds real time spent on it (LLM latency is real), so it is converted into product
    // time; the job's deadline (the scheduler's, product time) may end it sooner.
    const own = now + this.clock.product(this.config.QUNLI_EPISODE_TIMEOUT_MS);
    const given = Date.parse(job.deadline);
    const deadline = new Date(Number.isNaN(given) ? own : Math.min(own, given)).toISOString();
    const trigger = job.trigger;
    const lines = [
      ...job.context.map((m) => contextLine(m)),
      ...(job.fragments ?? []).map((f) => messageLine(f, true)),
      messageLine(trigger, true),
    ];
    const state: EpisodeState = {
      episodeId: job.episodeId,
      groupId: job.groupId,
      status: 'pending',
      trigger,
      lane: job.lane ?? (trigger.kind === EventKind.MessageDirect ? 'direct' : 'ambient'),
      startedAt: new Date(now).toISOString(),
      deadline,
      maxSteps: this.config.QUNLI_EPISODE_MAX_STEPS,
      tokenBudget: this.config.QUNLI_EPISODE_TOKEN_BUDGET,
      step: 0,
      tokensIn: 0,
      tokensOut: 0,
      llmCalls: 0,
      appliedSeq: job.controlSeq ?? 0,
      interruptsInARow: 0,
      invalidInARow: 0,
      history: [],
      windowStart: 0,
      discovered: [],
      lastThought: null,
      addressees: [],
      replies: 0,
      // Answered already, by the superseded episode: the scheduler must not decide them again when this one replies.
      ...(answered.length > 0 ? { answered: answered.slice(-ANSWERED_EVENT_IDS_MAX) } : {}),
      waiting: null,
      inFlightTool: null,
      outcome: null,
      endedBy: null,
      personaVersion: this.personaVersion.version,
      systemPrompt: plannerSystemPrompt(persona, trigger.payload.selfId),
      situationPrompt: '',
    };
    const merged = mergeMessages(state, lines).state;
    // Background lines are not answered by this episode: only the trigger and its fragments are.
    merged.addressees = merged.addressees.filter(
      (a) =>
        a.messageId === trigger.payload.messageId ||
        (job.fragments ?? []).some((f) => f.payload.messageId === a.messageId),
    );
    return merged;
  }

  private async begin(run: Run, attempt: number): Promise<void> {
    const { state, events } = run;
    state.situationPrompt = plannerSituation({
      persona: run.persona,
      groupId: state.groupId,
      trigger: state.trigger.payload,
      sections: run.sections,
      activity: null,
      now: this.clock.now(),
    });
    const started = events.event(EventKind.EpisodeStarted, {
      episodeId: state.episodeId,
      triggerEventId: state.trigger.id,
      model: this.replyer.modelName,
      plannerModel: this.planner.modelName,
      deadline: state.deadline,
      maxSteps: state.maxSteps,
      attempt,
      personaVersion: state.personaVersion,
      tokenBudget: state.tokenBudget,
    });
    const ingested = state.history
      .filter((e): e is ChatLine => e.kind === 'message')
      .slice(-8)
      .map((line) =>
        events.monitor('message.ingested', {
          speaker_name: line.name,
          content: line.text.slice(0, 500),
          message_id: line.messageId,
        }),
      );
    await this.commit(run, moveTo(state, 'thinking'), [
      started,
      events.monitor('session.start', {
        session_id: state.groupId ?? 'private',
        episode_id: state.episodeId,
        lane: state.lane,
      }),
      ...ingested,
    ]);
  }

  /**
   * Leave out the fragments taken over from a superseded episode that answered after all: its send was committed
   * just before the supersede, which the scheduler could not yet know. Its acted marker is set by then (a send
   * after the supersede is refused), so this check cannot miss it. Returns the ids left out too: they count as
   * answered by this episode's replies as well (they were, by its predecessor's), so the scheduler does not decide
   * them again.
   */
  private async withoutAnswered(job: EpisodeJob): Promise<{ job: EpisodeJob; answered: string[] }> {
    if (!job.inherited?.length || !job.fragments?.length) return { job, answered: [] };
    const covered = await this.store.answered(
      job.groupId,
      job.inherited.map((i) => i.episodeId),
    );
    const answered = new Set(
      job.inherited.flatMap((i, n) => {
        const by = covered[n];
        return by === null || by === undefined ? [] : i.eventIds.filter((id) => by === 'all' || by.has(id));
      }),
    );
    if (answered.size === 0) return { job, answered: [] };
    const fragments = job.fragments.filter((f) => !answered.has(f.id));
    return {
      job: { ...job, fragments },
      answered: job.fragments.filter((f) => answered.has(f.id)).map((f) => f.id),
    };
  }

  /** Continue a parked episode with what woke it; false when this job is not the one it waits for. */
  private async resume(run: Run): Promise<boolean> {
    const { job } = run;
    const waiting = run.state.waiting;
    if (job.mode !== 'resume' || !job.resume || !waiting) return false;
    const matches =
      (job.resume.cause === 'tool_result' &&
        waiting.cause === 'tool' &&
        job.resume.toolCallId === waiting.toolCallId) ||
      (job.resume.cause === 'timer' && (waiting.cause === 'wait' || waiting.cause === 'tool'));
    if (!matches) return false;
    let state: EpisodeState = {
      ...run.state,
      waiting: null,
      appliedSeq: Math.max(run.state.appliedSeq, job.controlSeq ?? 0),
    };
    const history = [...state.history];
    if (waiting.cause === 'wait') {
      history.push({
        kind: 'tool_result',
        callId: waitCallId(state, waiting.step),
        tool: 'wait',
        text: `已经等了 ${waiting.seconds ?? 0} 秒。`,
      });
    } else {
      const found =
        job.resume.cause === 'tool_result'
          ? await this.lookup.find(state.groupId, [job.resume.eventId])
          : new Map<string, EventEnvelope>();
      const result = found.get(job.resume.eventId)?.payload as ToolResultPayload | undefined;
      const text = result
        ? wrapResult(
            result.tool,
            { ok: result.ok, text: result.text, ...(result.error ? { error: result.error } : {}) },
            this.maxResultChars(result.tool),
          )
        : wrapResult(
            waiting.tool ?? 'tool',
            {
              ok: false,
              text: '工具没有在时限内返回结果。',
              error: { code: 'TOOL.TIMEOUT', message: 'no result in time' },
            },
            500,
          );
      history.push({
        kind: 'tool_result',
        callId: waiting.callId ?? waiting.toolCallId ?? 'unknown',
        tool: waiting.tool ?? 'tool',
        text,
      });
    }
    state = { ...state, history };
    const fresh = job.context.map((m) => contextLine(m));
    const merged = mergeMessages(state, [
      ...fresh,
      ...(job.fragments ?? []).map((f) => messageLine(f, true)),
      messageLine(job.trigger, true),
    ]);
    state = merged.state;
    if (merged.added.length > 0)
      state.history.push({ kind: 'perception', text: `等待期间又来了 ${merged.added.length} 条消息（在上面）。` });
    await this.commit(run, moveTo(state, 'thinking'), []);
    return true;
  }

  private async loop(run: Run): Promise<EpisodeResult> {
    for (;;) {
      const seen = run.seenAtCommit;
      run.seenAtCommit = undefined;
      await this.syncControl(run, seen);
      if (run.handBack.aborted) throw this.handedBack(run);
      const limit = limitReached(run.state, this.clock.nowMs());
      if (limit) return this.end(run, limit, []);
      const result = await this.step(run);
      if (result) return result;
    }
  }

  // --- one step -----------------------------------------------------------------------------------------------

  /** Plan and act once; returns the episode's result when the step ended or parked it. */
  private async step(run: Run): Promise<EpisodeResult | null> {
    const state = run.state;
    const index = state.step;
    run.seenAtCommit = undefined;
    run.pending.push(
      run.events.monitor('cycle.start', {
        cycle_id: `${state.episodeId}:${index}`,
        round_index: index,
        max_rounds: state.maxSteps,
      }),
    );
    const role = effectiveRole(state, this.config.owners);
    const discovered = new Set(state.discovered);
    const registryTools = this.tools.listed(role, discovered);
    const specs: ToolSpec[] = [
      ...actionToolSpecs({ stickers: this.stickers.list() }),
      ...registryTools.map((t) => ({ name: t.name, description: t.description, parameters: t.inputSchema })),
    ];
    const start = windowStart(state.history, state.windowStart, this.config.QUNLI_CONTEXT_MESSAGES);
    const window = windowEntries(state.history, start);
    const messages = plannerMessages(
      state.systemPrompt,
      state.situationPrompt,
      window,
      run.persona.identity.name,
      run.persona.timezone,
    );

    let gateCost: StepCost | null = null;
    if (this.gateApplies(run.state)) {
      const gate = await this.timingGate(run, index, messages);
      if (gate.decision) return this.act(run, index, gate.decision, undefined, gate.base, [], gate.cost);
      gateCost = gate.cost;
      run.state = { ...run.state, gatePassed: true };
    }

    const planning = new AbortController();
    run.planning = planning;
    const planned = await this.planner.plan({
      episodeId: state.episodeId,
      groupId: state.groupId,
      step: index,
      messages,
      tools: specs,
      signal: AbortSignal.any([planning.signal, run.halt.signal]),
      subjectText: state.trigger.payload.text,
      subjectMessageId: lastMessageId(state) ?? state.trigger.payload.messageId,
      observer: this.observer(run, 'planner'),
    });
    run.planning = null;
    const cost = gateCost ? addCost(gateCost, this.costOf([planned.call])) : this.costOf([planned.call]);
    this.recordCalls(run, index, 'planner', [planned.call]);
    if (state.windowStart !== start) run.state = { ...run.state, windowStart: start };

    if (!planned.ok) {
      if (planning.signal.aborted && planning.signal.reason === INTERRUPT && !run.halt.signal.aborted) {
        // Interrupted: the new messages are merged by syncControl; re-plan without spending a step.
        this.metrics.interrupts.inc({ effect: 'aborted_planner' });
        await this.commit(run, { ...run.state, interruptsInARow: run.state.interruptsInARow + 1 }, []);
        return null;
      }
      if (run.halt.signal.aborted) return this.afterHalt(run, cost);
      return this.end(
        run,
        {
          outcome: quietOutcomeOrFailed(run.state),
          cause: 'llm_error',
          reason: planned.error.message,
          errorCode: planned.error.code,
        },
        [
          this.stepEvent(
            run,
            index,
            { observation: { ok: false, summary: planned.error.message, errorCode: planned.error.code } },
            cost,
          ),
        ],
      );
    }

    const response = planned.response;
    const offered = new Set(specs.map((s) => s.name));
    const decision = decidePlannerAnswer(response, offered, run.state.history);
    const rawThought = response.content?.trim() ?? '';
    const thought = rawThought ? dedupThought(rawThought, run.state.lastThought) : null;
    if (thought?.replaced) this.metrics.reflections.inc();
    run.pending.push(
      run.events.monitor('planner.finalized', {
        cycle_id: `${state.episodeId}:${index}`,
        content: rawThought.slice(0, 1000),
        tool_calls: response.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments.slice(0, 500) })),
        prompt_tokens: planned.call.tokensIn,
        completion_tokens: planned.call.tokensOut,
        duration_ms: Math.round(planned.call.latencyMs),
        reflected: thought?.replaced === true,
      }),
    );
    const base: HistoryEntry[] = [];
    if (thought && !response.toolCalls.length) base.push({ kind: 'thought', text: thought.text });
    const callEntry: HistoryEntry | null = response.toolCalls.length
      ? { kind: 'tool_call', content: thought?.text ?? '', calls: response.toolCalls }
      : null;
    if (callEntry) base.push(callEntry);
    // Only the first call acts; the others get an answer so every call has its result.
    const extra: HistoryEntry[] = response.toolCalls.slice(1).map((c) => ({
      kind: 'tool_result',
      callId: c.id,
      tool: c.name,
      text: '没有执行：一次只能调用一个工具。',
    }));
    const next: EpisodeState = {
      ...run.state,
      lastThought: thought ? rawThought : run.state.lastThought,
      interruptsInARow: 0,
    };
    run.state = next;
    return this.act(run, index, decision, thought?.text, base, extra, cost);
  }

  private async act(
    run: Run,
    index: number,
    decision: PlannerDecision,
    thought: string | undefined,
    base: HistoryEntry[],
    extra: HistoryEntry[],
    cost: StepCost,
  ): Promise<EpisodeResult | null> {
    const fields = (action: EpisodeAction | undefined, observation: EpisodeObservation): StepFields => ({
      ...(thought ? { thought } : {}),
      ...(action ? { action } : {}),
      observation,
    });
    switch (decision.kind) {
      case 'invalid': {
        this.metrics.invalidToolCalls.inc({ reason: decision.reason });
        const invalidInARow = run.state.invalidInARow + 1;
        const correction: HistoryEntry = decision.call
          ? {
              kind: 'tool_result',
              callId: decision.call.id,
              tool: decision.call.name,
              text: correctionText(decision.hint),
            }
          : { kind: 'perception', text: correctionText(decision.hint) };
        const action = decision.call ? recorded(decision.call) : undefined;
        const step = this.stepEvent(
          run,
          index,
          fields(action, { ok: false, summary: decision.message, errorCode: 'EPISODE.INVALID_TOOL_CALL' }),
          cost,
        );
        if (invalidInARow > MAX_CORRECTIONS) {
          return this.end(
            run,
            {
              outcome: quietOutcomeOrFailed(run.state),
              cause: 'invalid_calls',
              reason: `no usable planner answer after ${MAX_CORRECTIONS} corrections: ${decision.message}`,
              errorCode: 'EPISODE.INVALID_TOOL_CALL',
            },
            [step],
            { step: index + 1 },
          );
        }
        await this.commit(
          run,
          {
            ...run.state,
            step: index + 1,
            invalidInARow,
            history: [...run.state.history, ...base, correction, ...extra],
          },
          [step],
        );
        return null;
      }
      case 'reply':
        return this.reply(run, index, decision, fields, base, extra, cost);
      case 'send_emoji':
        return this.sendEmoji(run, index, decision.call, decision.args, fields, base, extra, cost);
      case 'wait': {
        const nowMs = this.clock.nowMs();
        const fits = waitFits(run.state, nowMs, decision.args.seconds);
        if (!fits.ok) {
          return this.act(
            run,
            index,
            {
              kind: 'invalid',
              call: decision.call,
              reason: 'invalid_arguments',
              message: `wait ${decision.args.seconds}s runs past the deadline (at most ${fits.maxSeconds}s)`,
              hint: `最多只能再等 ${fits.maxSeconds} 秒`,
            },
            thought,
            base,
            extra,
            cost,
          );
        }
        const resumeAt = new Date(nowMs + decision.args.seconds * 1000).toISOString();
        const step = this.stepEvent(
          run,
          index,
          fields(recorded(decision.call), { ok: true, summary: `waiting ${decision.args.seconds}s until ${resumeAt}` }),
          cost,
        );
        const waiting = run.events.event(EventKind.EpisodeWaiting, {
          episodeId: run.state.episodeId,
          triggerEventId: run.state.trigger.id,
          cause: 'wait',
          step: index,
          resumeAt,
          deadline: run.state.deadline,
        });
        const parked = moveTo(
          {
            ...run.state,
            step: index + 1,
            invalidInARow: 0,
            history: [...run.state.history, ...base, ...extra],
            waiting: { cause: 'wait', step: index, resumeAt, seconds: decision.args.seconds },
          },
          'awaiting_observation',
        );
        await this.commit(run, parked, [step, waiting]);
        this.metrics.waits.inc({ cause: 'wait' });
        return { outcome: 'waiting', steps: index + 1, actionIds: run.actionIds };
      }
      case 'end': {
        const step = this.stepEvent(
          run,
          index,
          fields(recorded(decision.call), { ok: true, summary: `${decision.action}: ${decision.reason}` }),
          cost,
        );
        return this.end(
          run,
          { outcome: quietOutcome(run.state), cause: 'action', reason: `${decision.action}: ${decision.reason}` },
          [step],
          { step: index + 1 },
        );
      }
      case 'tool':
        return this.callTool(run, index, decision.call, decision.args, fields, base, extra, cost);
    }
  }

  private async reply(
    run: Run,
    index: number,
    decision: Extract<PlannerDecision, { kind: 'reply' }>,
    fields: (a: EpisodeAction | undefined, o: EpisodeObservation) => StepFields,
    base: HistoryEntry[],
    extra: HistoryEntry[],
    cost: StepCost,
  ): Promise<EpisodeResult | null> {
    run.state = moveTo(run.state, 'acting');
    const { target } = decision;
    const targetPayload = this.payloadOf(run, target);
    // Answering the trigger answers its fragments; answering a later message of the same person answers what they
    // said before it in this episode that no reply has answered yet.
    const toTrigger = target.messageId === run.state.trigger.payload.messageId;
    const earlier = toTrigger ? [] : earlierOf(run.state, target);
    const fragments = toTrigger
      ? (run.job.fragments ?? []).map((f) => f.payload)
      : earlier.map((line) => this.payloadOf(run, line));
    const followUps = followUpsOf(run.state, target);
    const written = await this.replyer.write({
      episodeId: run.state.episodeId,
      groupId: run.state.groupId,
      step: index,
      persona: run.persona,
      selfId: run.state.trigger.payload.selfId,
      target: targetPayload,
      fragments,
      followUps: followUps.map((line) => this.payloadOf(run, line)),
      context: backgroundOf(run.state, target, new Set(earlier.map((line) => line.messageId))),
      sections: run.sections,
      replyArgs: {
        msg_id: decision.args.msg_id,
        ...(decision.args.quote !== undefined ? { quote: decision.args.quote } : {}),
        ...(decision.args.intent ? { intent: decision.args.intent } : {}),
      },
      now: this.clock.now(),
      signal: run.halt.signal,
      observer: this.observer(run, 'replyer'),
    });
    this.recordCalls(run, index, 'replyer', written.calls);
    const total = addCost(cost, this.costOf(written.calls));
    total.model = written.calls[written.calls.length - 1]?.model ?? total.model;
    if (run.halt.signal.aborted) return this.afterHalt(run, total);
    if (!written.ok) {
      if (written.error.code.startsWith('LLM.')) {
        return this.end(
          run,
          {
            outcome: quietOutcomeOrFailed(run.state),
            cause: 'llm_error',
            reason: written.error.message,
            errorCode: written.error.code,
          },
          [
            this.stepEvent(
              run,
              index,
              fields(recorded(decision.call), {
                ok: false,
                summary: written.error.message,
                errorCode: written.error.code,
              }),
              total,
            ),
          ],
        );
      }
      run.state = moveTo(run.state, 'thinking');
      return this.act(
        run,
        index,
        {
          kind: 'invalid',
          call: decision.call,
          reason: 'invalid_arguments',
          message: written.error.message,
          hint: '刚才没写出能发的话',
        },
        undefined,
        base,
        extra,
        total,
      );
    }
    const target$ = targetOf(run.state);
    const actionId = actionIdFor(run.state.episodeId, index);
    const covered = [
      target.eventId,
      ...(toTrigger ? (run.job.fragments ?? []).map((f) => f.id) : earlier.map((line) => line.eventId)),
      ...followUps.map((line) => line.eventId),
    ];
    const answered = [...new Set([...(run.state.answered ?? []), ...covered])].slice(-ANSWERED_EVENT_IDS_MAX);
    const send = run.events.event(
      EventKind.ActionSend,
      {
        actionId,
        episodeId: run.state.episodeId,
        triggerEventId: run.state.trigger.id,
        ...target$,
        text: written.text,
        toUserId: target.userId,
        ...(decision.args.quote ? { quoteMessageId: target.messageId } : {}),
        // Its message.sent may reach the scheduler before the episode completes: what this reply answers.
        answeredEventIds: answered,
      },
      PRIORITY.action,
    );
    const step = this.stepEvent(
      run,
      index,
      fields(
        { type: 'reply', args: { ...decision.args, text: written.text } },
        { ok: true, summary: `replied to ${target.messageId} (${[...written.text].length} chars)` },
      ),
      total,
    );
    const self: ChatLine = {
      kind: 'message',
      eventId: actionId,
      messageId: actionId,
      userId: run.state.trigger.payload.selfId,
      name: run.persona.identity.name,
      text: written.text,
      sentAt: Math.floor(this.clock.nowMs() / 1000),
      fromSelf: true,
    };
    const history: HistoryEntry[] = [
      ...run.state.history,
      ...base,
      { kind: 'tool_result', callId: decision.call.id, tool: 'reply', text: `已发送：${written.text}` },
      ...extra,
      self,
    ];
    run.actionIds.push(actionId);
    const next = {
      ...run.state,
      step: index + 1,
      invalidInARow: 0,
      replies: run.state.replies + 1,
      answered,
      history,
    };
    const goesOn = index + 1 < run.state.maxSteps;
    if (decision.args.continue && goesOn) {
      await this.commit(run, moveTo(next, 'thinking'), [step, send], { acts: true });
      return null;
    }
    // Messages taken in while the reply was written (an interrupt cannot abort the replyer) are not in it: the
    // episode goes on to them instead of ending as if it had answered everyone. The final commit yields to such an
    // interrupt (it reads the control record in the same atomic step), and the send is committed going on instead.
    const before = run.state;
    run.state = next;
    const ended = await this.ending(
      run,
      { outcome: 'replied', cause: 'action', reason: `replied to ${target.messageId}` },
      [step, send],
      {},
      goesOn ? (record) => unseenInterrupt(record, before) : undefined,
    );
    if (ended) return ended;
    run.state = before;
    await this.commit(run, moveTo(next, 'thinking'), [step, send], { acts: true });
    return null;
  }

  private async sendEmoji(
    run: Run,
    index: number,
    call: ToolCall,
    args: Record<string, unknown>,
    fields: (a: EpisodeAction | undefined, o: EpisodeObservation) => StepFields,
    base: HistoryEntry[],
    extra: HistoryEntry[],
    cost: StepCost,
  ): Promise<EpisodeResult | null> {
    const sticker = this.stickers.get(typeof args.sticker === 'string' ? args.sticker : '');
    if (!sticker) {
      return this.act(
        run,
        index,
        {
          kind: 'invalid',
          call,
          reason: 'invalid_arguments',
          message: `no sticker ${String(args.sticker)}`,
          hint: `没有这个表情，只能从列出的里选`,
        },
        undefined,
        base,
        extra,
        cost,
      );
    }
    const actionId = actionIdFor(run.state.episodeId, index);
    const segments: MessageSegment[] = [{ type: 'image', data: { file: sticker.file, summary: sticker.description } }];
    const send = run.events.event(
      EventKind.ActionSend,
      {
        actionId,
        episodeId: run.state.episodeId,
        triggerEventId: run.state.trigger.id,
        ...targetOf(run.state),
        text: `[表情：${sticker.description}]`,
        segments,
        // A sticker answers no message of its own; the list says so (absent would mean "all of them").
        answeredEventIds: run.state.answered ?? [],
      },
      PRIORITY.action,
    );
    const step = this.stepEvent(
      run,
      index,
      fields(recorded(call), { ok: true, summary: `sticker ${sticker.id}` }),
      cost,
    );
    run.actionIds.push(actionId);
    const history: HistoryEntry[] = [
      ...run.state.history,
      ...base,
      { kind: 'tool_result', callId: call.id, tool: 'send_emoji', text: `已发送表情：${sticker.description}` },
      ...extra,
    ];
    await this.commit(
      run,
      { ...run.state, step: index + 1, invalidInARow: 0, replies: run.state.replies + 1, history },
      [step, send],
      { acts: true },
    );
    return null;
  }

  private async callTool(
    run: Run,
    index: number,
    call: ToolCall,
    args: Record<string, unknown>,
    fields: (a: EpisodeAction | undefined, o: EpisodeObservation) => StepFields,
    base: HistoryEntry[],
    extra: HistoryEntry[],
    cost: StepCost,
  ): Promise<EpisodeResult | null> {
    const tool = this.tools.get(call.name);
    const action: EpisodeAction = { type: 'tool_call', args: { tool: call.name, arguments: args, callId: call.id } };
    if (!tool) {
      return this.act(
        run,
        index,
        {
          kind: 'invalid',
          call,
          reason: 'unknown_tool',
          message: `tool ${call.name} went away`,
          hint: `工具「${call.name}」现在不能用了`,
        },
        undefined,
        base,
        extra,
        cost,
      );
    }
    const valid = tool.validate(args);
    if (!valid.ok) {
      this.metrics.toolCalls.inc({ tool: tool.name, outcome: 'invalid_arguments' });
      return this.act(
        run,
        index,
        {
          kind: 'invalid',
          call,
          reason: 'invalid_arguments',
          message: `invalid ${tool.name} arguments: ${valid.errors.join('; ')}`,
          hint: `${tool.name} 的参数不对（${valid.errors.join('；')}）`,
        },
        undefined,
        base,
        extra,
        cost,
      );
    }
    const role = effectiveRole(run.state, this.config.owners);
    const senderId = run.state.trigger.payload.sender.userId;
    if (tool.requiresConfirmation) {
      const confirmed = await this.confirmations.check(run.state, senderId, tool.name, args);
      if (!confirmed) {
        await this.confirmations.request(run.state, senderId, tool.name, args, this.clock.nowMs());
        this.metrics.toolCalls.inc({ tool: tool.name, outcome: 'needs_confirmation' });
        const text = wrapResult(
          tool.name,
          {
            ok: false,
            text: `这个操作需要 ${run.state.trigger.payload.sender.displayName} 先确认。请先问对方是否确认（对方回复"确认"后再调用一次）。`,
            error: { code: 'TOOL.NEEDS_CONFIRMATION', message: 'needs confirmation' },
          },
          500,
        );
        const step = this.stepEvent(
          run,
          index,
          fields(action, {
            ok: false,
            summary: `${tool.name} needs the sender's confirmation`,
            errorCode: 'TOOL.NEEDS_CONFIRMATION',
          }),
          cost,
        );
        await this.commit(
          run,
          {
            ...run.state,
            step: index + 1,
            history: [
              ...run.state.history,
              ...base,
              { kind: 'tool_result', callId: call.id, tool: tool.name, text },
              ...extra,
            ],
          },
          [step],
        );
        return null;
      }
    }
    const toolCallId = `${run.state.episodeId}:${index}:${call.id}`;
    if (tool.sideEffect && !tool.idempotent) {
      // Record the call before it runs: a crash in between leaves a known unknown, never a second run.
      if (run.state.inFlightTool?.step === index) {
        const text = wrapResult(
          tool.name,
          {
            ok: false,
            text: '上一次调用这个工具时中断了，不知道有没有做成；不要重复调用。',
            error: { code: 'TOOL.UNKNOWN_OUTCOME', message: 'interrupted earlier' },
          },
          500,
        );
        const step = this.stepEvent(
          run,
          index,
          fields(action, { ok: false, summary: 'outcome unknown after a crash', errorCode: 'TOOL.UNKNOWN_OUTCOME' }),
          cost,
        );
        await this.commit(
          run,
          {
            ...run.state,
            step: index + 1,
            inFlightTool: null,
            history: [
              ...run.state.history,
              ...base,
              { kind: 'tool_result', callId: call.id, tool: tool.name, text },
              ...extra,
            ],
          },
          [step],
        );
        return null;
      }
      await this.commit(run, { ...run.state, inFlightTool: { callId: toolCallId, tool: tool.name, step: index } }, [], {
        acts: true,
      });
    }
    run.state = moveTo(run.state, 'acting');
    const ran = await this.tools.run(
      tool,
      valid.value,
      {
        episodeId: run.state.episodeId,
        toolCallId,
        groupId: run.state.groupId,
        selfId: run.state.trigger.payload.selfId,
        senderId,
        senderRole: role === 'owner' ? 'owner' : role === 'admin' ? 'admin' : 'member',
        now: this.clock.now(),
      },
      run.halt.signal,
    );
    this.metrics.toolCalls.inc({
      tool: tool.name,
      outcome: ran.outcome.ok ? 'ok' : (ran.outcome.error?.code ?? 'TOOL.FAILED'),
    });
    this.metrics.toolDuration.observe({ tool: tool.name }, ran.latencyMs / 1000);
    if (run.halt.signal.aborted) return this.afterHalt(run, cost);
    const observation: EpisodeObservation = {
      ok: ran.outcome.ok,
      summary: `${tool.name}: ${ran.outcome.text.slice(0, 300)}`,
      ...(ran.outcome.error ? { errorCode: ran.outcome.error.code } : {}),
    };
    const step = this.stepEvent(run, index, fields(action, observation), {
      ...cost,
      latencyMs: cost.latencyMs + ran.latencyMs,
    });
    if (tool.asynchronous && ran.outcome.ok) {
      const timeoutAt = new Date(this.clock.nowMs() + tool.timeoutMs).toISOString();
      const waiting = run.events.event(EventKind.EpisodeWaiting, {
        episodeId: run.state.episodeId,
        triggerEventId: run.state.trigger.id,
        cause: 'tool',
        step: index,
        toolCallId,
        timeoutAt,
        deadline: run.state.deadline,
      });
      const parked = moveTo(
        {
          ...run.state,
          step: index + 1,
          invalidInARow: 0,
          inFlightTool: null,
          history: [...run.state.history, ...base, ...extra],
          waiting: { cause: 'tool', step: index, toolCallId, callId: call.id, tool: tool.name, timeoutAt },
        },
        'awaiting_observation',
      );
      // The tool_call entry is answered when the result arrives (resume), so it stays open in the history.
      await this.commit(run, parked, [step, waiting]);
      this.metrics.waits.inc({ cause: 'tool' });
      return { outcome: 'waiting', steps: index + 1, actionIds: run.actionIds };
    }
    const discovered = Array.isArray(ran.outcome.data?.discovered)
      ? (ran.outcome.data.discovered as unknown[]).filter((n): n is string => typeof n === 'string')
      : [];
    const text = wrapResult(tool.name, ran.outcome, tool.maxResultChars);
    const next = moveTo(
      {
        ...run.state,
        step: index + 1,
        invalidInARow: 0,
        inFlightTool: null,
        discovered: [...new Set([...run.state.discovered, ...discovered])],
        history: [
          ...run.state.history,
          ...base,
          { kind: 'tool_result', callId: call.id, tool: tool.name, text },
          ...extra,
        ],
      },
      'thinking',
    );
    await this.commit(run, next, [step]);
    return null;
  }

  /** QUNLI_TIMING_GATE: ambient episodes (or all) ask the gate once, at their first step. */
  private gateApplies(state: EpisodeState): boolean {
    const mode = this.config.QUNLI_TIMING_GATE;
    if (mode === 'off' || state.gatePassed || state.step > 0) return false;
    return mode === 'always' || state.lane === 'ambient';
  }

  /** The timing gate's call: `continue` goes on to the planner; `wait` / `no_action` are the step's action. */
  private async timingGate(
    run: Run,
    index: number,
    messages: ReturnType<typeof plannerMessages>,
  ): Promise<{ decision: PlannerDecision | null; base: HistoryEntry[]; cost: StepCost }> {
    const tools = timingGateTools();
    const gated = await this.planner.plan({
      episodeId: run.state.episodeId,
      groupId: run.state.groupId,
      step: index,
      messages: [...messages, { role: 'user', content: TIMING_GATE_PROMPT }],
      tools,
      signal: run.halt.signal,
      subjectText: run.state.trigger.payload.text,
      subjectMessageId: run.state.trigger.payload.messageId,
      observer: this.observer(run, 'timing_gate'),
      maxTokens: 384,
    });
    this.recordCalls(run, index, 'timing_gate', [gated.call]);
    const cost = this.costOf([gated.call]);
    const first = gated.ok ? gated.response.toolCalls[0] : undefined;
    run.pending.push(
      run.events.monitor('timing_gate.result', {
        action: first?.name ?? (gated.ok ? 'none' : gated.error.code),
        content: gated.ok ? (gated.response.content ?? '').slice(0, 500) : '',
        tool_calls: gated.ok
          ? gated.response.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments.slice(0, 200) }))
          : [],
        prompt_tokens: gated.call.tokensIn,
      }),
    );
    if (!gated.ok || !first || first.name === 'continue') return { decision: null, base: [], cost };
    const decision = decidePlannerAnswer(
      { content: null, toolCalls: [first] },
      new Set(['wait', 'no_action']),
      run.state.history,
    );
    // An unusable gate answer fails open: the planner decides.
    if (decision.kind !== 'wait' && decision.kind !== 'end') return { decision: null, base: [], cost };
    return { decision, base: [{ kind: 'tool_call', content: '', calls: [first] }], cost };
  }

  // --- control ------------------------------------------------------------------------------------------------

  /** A command heard while running: stop aborts everything; interrupt aborts the planner while it may. */
  private heard(run: Run, command: EpisodeControlPayload): void {
    if (command.seq <= run.state.appliedSeq) return;
    if (command.command === 'cancel' || command.command === 'supersede') run.halt.abort(STOP);
    if (command.command === 'interrupt') {
      if (run.planning && interruptible(run.state, this.config.QUNLI_PLANNER_MAX_INTERRUPTS))
        run.planning.abort(INTERRUPT);
      else this.metrics.interrupts.inc({ effect: 'merged_after' });
    }
  }

  /**
   * Apply every command not applied yet, in seq order: heard ones, the durable record, gaps from the log. `seen`:
   * the record as the commit just before read it (then it is not read again).
   */
  private async syncControl(run: Run, seen?: { json: string | null }): Promise<void> {
    const heard = run.inbox.take();
    const record = seen
      ? this.control.parse(seen.json)
      : await this.control.record(run.state.groupId, run.state.episodeId);
    const bySeq = new Map<number, EpisodeControlPayload>();
    for (const c of heard) if (c.seq > run.state.appliedSeq) bySeq.set(c.seq, c);
    if (record && record.seq > run.state.appliedSeq) {
      bySeq.set(record.latest.seq, record.latest);
      const missing: number[] = [];
      for (let seq = run.state.appliedSeq + 1; seq < record.seq; seq++) if (!bySeq.has(seq)) missing.push(seq);
      // An interrupt names every message taken in so far and a stop ends the episode: commands missed before either
      // change nothing, and reading them from the log would cost a scan of it.
      if (missing.length > 0 && !coversEarlier(record.latest)) {
        // Stream entry ids are wall-clock ms. Commands come after the trigger's decision, and the trigger's UUIDv7 id
        // carries its wall time; an episode that waited for a slot got commands before it started.
        const startedWall = Date.now() - this.clock.real(this.clock.since(run.state.startedAt));
        const triggerWall = uuidV7Ms(run.state.trigger.id) ?? startedWall;
        const sinceWall = Math.min(startedWall, triggerWall) - 60_000;
        for (const c of await this.control.fromLog(
          run.state.groupId,
          run.state.episodeId,
          run.state.appliedSeq,
          record.seq,
          sinceWall,
        )) {
          bySeq.set(c.seq, c);
        }
      }
      if (record.stopped && ![...bySeq.values()].some((c) => c.command === 'cancel' || c.command === 'supersede')) {
        bySeq.set(record.seq, {
          ...record.latest,
          command: record.latest.command === 'supersede' ? 'supersede' : 'cancel',
        });
      }
    }
    const commands = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
    if (commands.length === 0) return;
    let state = run.state;
    const interruptIds: string[] = [];
    for (const command of commands) {
      const effect = controlEffect(state, command);
      state = { ...state, appliedSeq: Math.max(state.appliedSeq, command.seq) };
      if (effect.kind === 'stop') {
        run.state = state;
        throw new Halt(await this.end(run, effect.end, []));
      }
      if (effect.kind === 'interrupt') interruptIds.push(...effect.eventIds);
    }
    if (interruptIds.length > 0) {
      const found = await this.lookup.find(state.groupId, interruptIds);
      const lines = interruptIds
        .map((id) => found.get(id))
        .filter(
          (e): e is EventEnvelope<MessagePayload> =>
            e !== undefined && (e.kind === EventKind.MessageObserved || e.kind === EventKind.MessageDirect),
        )
        .map((e) => messageLine(e, true));
      // The bot's own line last in the history: the messages came while its reply was written and sent.
      const afterReply = [...state.history].reverse().find((e) => e.kind === 'message')?.fromSelf === true;
      const merged = mergeMessages(state, lines);
      state = merged.state;
      if (merged.added.length > 0) {
        // The oldest of them is the turn: the replyer answers it with the sender's messages after it.
        const first = merged.added.find((line) => !line.fromSelf) ?? merged.added[0]!;
        const note = afterReply
          ? afterReplyNote(merged.added.length, first.messageId)
          : interruptNote(merged.added.length);
        state = { ...state, history: [...state.history, { kind: 'perception', text: note }] };
        for (const line of merged.added) {
          run.pending.push(
            run.events.monitor('message.ingested', {
              speaker_name: line.name,
              content: line.text.slice(0, 500),
              message_id: line.messageId,
            }),
          );
        }
      }
    }
    await this.commit(run, state, []);
  }

  // --- ends ---------------------------------------------------------------------------------------------------

  private async afterHalt(run: Run, cost: StepCost): Promise<EpisodeResult> {
    const reason = run.halt.signal.reason as string;
    if (reason === 'hand_back') throw this.handedBack(run);
    if (reason === 'deadline') {
      const limit = limitReached(run.state, Number.POSITIVE_INFINITY)!;
      return this.end(
        run,
        limit,
        cost.llmCalls > 0
          ? [
              this.stepEvent(
                run,
                run.state.step,
                {
                  observation: {
                    ok: false,
                    summary: 'stopped at the deadline',
                    errorCode: 'EPISODE.DEADLINE_EXCEEDED',
                  },
                },
                cost,
              ),
            ]
          : [],
        { step: run.state.step + (cost.llmCalls > 0 ? 1 : 0) },
      );
    }
    // A stop command: syncControl applies it (and ends the episode).
    await this.syncControl(run);
    return this.end(run, { outcome: 'cancelled', cause: 'cancelled', reason: 'stopped' }, []);
  }

  private handedBack(run: Run): Halt {
    this.metrics.handedBack.inc();
    return new Halt({ outcome: 'handed_back', steps: run.state.step, actionIds: run.actionIds });
  }

  private async end(
    run: Run,
    end: EpisodeEnd,
    events: EventEnvelope[],
    patch: Partial<EpisodeState> = {},
  ): Promise<EpisodeResult> {
    return (await this.ending(run, end, events, patch))!;
  }

  /** `end`, unless `yieldTo` holds for a newer interrupt the final commit met: then null, and nothing is committed. */
  private async ending(
    run: Run,
    end: EpisodeEnd,
    events: EventEnvelope[],
    patch: Partial<EpisodeState>,
    yieldTo?: (record: EpisodeControlRecord) => boolean,
  ): Promise<EpisodeResult | null> {
    const state: EpisodeState = moveTo(
      { ...run.state, ...patch, outcome: end.outcome, endedBy: end.cause, waiting: null },
      'final',
    );
    const error = end.errorCode ? { code: end.errorCode, message: end.reason } : undefined;
    const completed = run.events.event(EventKind.EpisodeCompleted, {
      episodeId: state.episodeId,
      triggerEventId: state.trigger.id,
      outcome: end.outcome,
      ...(error ? { error } : {}),
      steps: state.step,
      tokensIn: state.tokensIn,
      tokensOut: state.tokensOut,
      durationMs: Math.max(0, this.clock.nowMs() - Date.parse(state.startedAt)),
      endedBy: end.cause,
      reason: end.reason.slice(0, 500),
      llmCalls: state.llmCalls,
      // The scheduler marks only these replied and decides the episode's other events again (an interrupt that
      // came after the last look at the control record is in none of the replies).
      ...(end.outcome === 'replied' ? { answeredEventIds: state.answered ?? [] } : {}),
    });
    const acts = events.some((e) => e.kind === EventKind.ActionSend);
    if (
      !(await this.commit(run, state, [...events, completed], { acts, final: true, ...(yieldTo ? { yieldTo } : {}) }))
    )
      return null;
    this.metrics.episodes.inc({ outcome: end.outcome, ended_by: end.cause });
    this.metrics.steps.observe(state.step);
    if (error && end.outcome === 'failed')
      this.logger.warn(`episode ${state.episodeId} failed: ${error.code} ${error.message}`);
    return {
      outcome: end.outcome,
      steps: state.step,
      actionIds: run.actionIds,
      endedBy: end.cause,
      ...(error ? { error } : {}),
    };
  }

  // --- plumbing -----------------------------------------------------------------------------------------------

  /**
   * Commit the state with its events (and the pending monitor / llm.called events); stop on conflict or stop.
   * `yieldTo`: when the control record's newest command is an interrupt the state has not applied and this says
   * yes to it, nothing is committed and the answer is false.
   */
  private async commit(
    run: Run,
    state: EpisodeState,
    events: EventEnvelope[],
    options: { acts?: boolean; final?: boolean; yieldTo?: (record: EpisodeControlRecord) => boolean } = {},
  ): Promise<boolean> {
    const all = [...run.pending, ...events];
    const result = await this.store.commit(state, run.rev, all, {
      acts: options.acts === true,
      final: options.final === true,
      ...(options.yieldTo ? { yieldAfterSeq: state.appliedSeq } : {}),
    });
    if (result.kind === 'committed') {
      run.rev = result.rev;
      run.state = state;
      run.pending = [];
      run.seenAtCommit = { json: result.control };
      return true;
    }
    if (result.kind === 'yielded') {
      const record = this.control.parse(result.control);
      if (record && options.yieldTo!(record)) return false;
      // An interrupt of messages the episode has already taken in: nothing to yield to.
      return this.commit(run, state, events, { ...options, yieldTo: undefined });
    }
    if (result.kind === 'conflict') {
      this.metrics.redeliveries.inc({ reason: 'another_worker' });
      this.logger.warn(`episode ${state.episodeId}: another worker moved it on (rev ${result.rev}); this job stops`);
      throw new Halt({ outcome: 'duplicate', steps: state.step, actionIds: [] });
    }
    // Stopped by the scheduler between our decision and the commit: the action is dropped, the stop applies.
    run.pending = all.filter((e) => e.kind === EventKind.LlmCalled || e.kind === EventKind.MonitorRecorded);
    run.actionIds = run.actionIds.filter(
      (id) => !all.some((e) => e.kind === EventKind.ActionSend && (e.payload as { actionId: string }).actionId === id),
    );
    await this.syncControl(run);
    throw new Halt(
      await this.end(run, { outcome: 'cancelled', cause: 'cancelled', reason: 'stopped before it could act' }, []),
    );
  }

  private duplicate(reason: string): EpisodeResult {
    this.metrics.redeliveries.inc({ reason });
    return { outcome: 'duplicate', steps: 0, actionIds: [] };
  }

  private observer(run: Run, purpose: string): ChatCallObserver {
    return {
      retry: (info) => {
        run.pending.push(run.events.monitor('llm.retry', { purpose, ...info }));
      },
    };
  }

  private recordCalls(run: Run, step: number, purpose: string, calls: LlmCallRecord[]): void {
    let state = run.state;
    for (const call of calls) {
      const n = state.llmCalls + 1;
      run.pending.push(
        run.events.llmCalled({
          callId: `${state.episodeId}:${step}:${purpose}:${n}`,
          role: call.role,
          model: call.model,
          purpose,
          outcome: call.outcome,
          tokensIn: Math.round(call.tokensIn),
          tokensOut: Math.round(call.tokensOut),
          estimated: call.estimated,
          attempts: call.attempts,
          latencyMs: call.latencyMs,
          step,
        }),
      );
      if (call.outcome !== 'ok' && call.outcome !== 'LLM.ABORTED') {
        run.pending.push(run.events.monitor('llm.error', { purpose, code: call.outcome, model: call.model, step }));
      }
      state = {
        ...state,
        llmCalls: n,
        tokensIn: state.tokensIn + Math.round(call.tokensIn),
        tokensOut: state.tokensOut + Math.round(call.tokensOut),
      };
    }
    run.state = state;
  }

  private costOf(calls: LlmCallRecord[]): StepCost {
    return calls.reduce<StepCost>(
      (sum, c) => ({
        tokensIn: sum.tokensIn + Math.round(c.tokensIn),
        tokensOut: sum.tokensOut + Math.round(c.tokensOut),
        latencyMs: sum.latencyMs + c.latencyMs,
        llmCalls: sum.llmCalls + 1,
        model: c.model,
      }),
      { tokensIn: 0, tokensOut: 0, latencyMs: 0, llmCalls: 0 },
    );
  }

  private stepEvent(run: Run, index: number, fields: StepFields, cost: StepCost): EventEnvelope {
    return run.events.event(EventKind.EpisodeStep, {
      episodeId: run.state.episodeId,
      index,
      ...fields,
      tokensIn: cost.tokensIn,
      tokensOut: cost.tokensOut,
      latencyMs: cost.latencyMs,
      llmCalls: cost.llmCalls,
      ...(cost.model ? { model: cost.model } : {}),
    });
  }

  private maxResultChars(tool: string): number {
    return this.tools.get(tool)?.maxResultChars ?? this.config.QUNLI_TOOL_RESULT_MAX_CHARS;
  }

  /** The full payload of a chat line, for the replyer (the trigger, a fragment, or rebuilt from the line). */
  private payloadOf(run: Run, line: ChatLine): MessagePayload {
    const all = [run.state.trigger, ...(run.job.fragments ?? [])];
    const found = all.find((e) => e.payload.messageId === line.messageId);
    if (found) return found.payload;
    return {
      messageType: run.state.trigger.payload.messageType,
      selfId: run.state.trigger.payload.selfId,
      messageId: line.messageId,
      ...(run.state.trigger.payload.groupName ? { groupName: run.state.trigger.payload.groupName } : {}),
      sender: {
        userId: line.userId,
        nickname: line.nickname ?? line.name,
        card: line.card ?? '',
        displayName: line.name,
        role: line.role ?? 'member',
      },
      segments: line.segments ?? [{ type: 'text', data: { text: line.text } }],
      text: line.text,
      truncated: false,
      mentionsSelf: false,
      sentAt: line.sentAt,
    };
  }
}

type StepFields = { thought?: string; action?: EpisodeAction; observation?: EpisodeObservation };

function addCost(a: StepCost, b: StepCost): StepCost {
  return {
    tokensIn: a.tokensIn + b.tokensIn,
    tokensOut: a.tokensOut + b.tokensOut,
    latencyMs: a.latencyMs + b.latencyMs,
    llmCalls: a.llmCalls + b.llmCalls,
    ...(a.model ? { model: a.model } : {}),
  };
}

/** Whether the record's newest command is an interrupt naming messages the episode has not taken in yet. */
function unseenInterrupt(record: EpisodeControlRecord, state: EpisodeState): boolean {
  if (record.stopped || record.seq <= state.appliedSeq) return false;
  if (record.latest.command !== 'interrupt') return false;
  const known = new Set(state.history.flatMap((e) => (e.kind === 'message' ? [e.eventId] : [])));
  return (record.latest.eventIds ?? []).some((id) => !known.has(id));
}

/** Whether a command makes the ones before it moot (the `EpisodeControlPayload` contract). */
function coversEarlier(command: EpisodeControlPayload): boolean {
  return command.command === 'interrupt' || command.command === 'cancel' || command.command === 'supersede';
}

function quietOutcomeOrFailed(state: EpisodeState): 'replied' | 'failed' {
  return state.replies > 0 ? 'replied' : 'failed';
}

/** A step's recorded action: the call with its arguments as parsed, or raw when unparsable. */
function recorded(call: ToolCall): EpisodeAction {
  try {
    const args: unknown = JSON.parse(call.arguments || '{}');
    if (args && typeof args === 'object' && !Array.isArray(args))
      return { type: call.name, args: args as Record<string, unknown> };
  } catch {
    return { type: call.name, args: { raw: call.arguments.slice(0, 2000) } };
  }
  return { type: call.name, args: { raw: call.arguments.slice(0, 2000) } };
}

function waitCallId(state: EpisodeState, step: number): string {
  for (let i = state.history.length - 1; i >= 0; i--) {
    const entry = state.history[i]!;
    if (entry.kind === 'tool_call') {
      const call = entry.calls.find((c) => c.name === 'wait');
      if (call) return call.id;
    }
  }
  return `wait_${step}`;
}

function lastMessageId(state: EpisodeState): string | undefined {
  for (let i = state.history.length - 1; i >= 0; i--) {
    const entry = state.history[i]!;
    if (entry.kind === 'message' && !entry.fromSelf) return entry.messageId;
  }
  return undefined;
}

/** Where the episode's words go: its own conversation, never one named by the model. */
function targetOf(state: EpisodeState): { targetType: 'group' | 'private'; targetId: string } {
  const trigger = state.trigger.payload;
  if (trigger.messageType === 'private' || state.groupId === null || state.groupId.startsWith('private:')) {
    return { targetType: 'private', targetId: trigger.sender.userId };
  }
  return { targetType: 'group', targetId: state.groupId };
}

/** The chat lines before `target`, as the replyer's background. */
function backgroundOf(
  state: EpisodeState,
  target: ChatLine,
  answered: ReadonlySet<string> = new Set(),
): ContextMessage[] {
  const lines = state.history.filter((e): e is ChatLine => e.kind === 'message');
  const at = lines.findIndex((l) => l.messageId === target.messageId);
  return (at >= 0 ? lines.slice(0, at) : lines)
    .filter((l) => !answered.has(l.messageId))
    .map((l) => ({
      eventId: l.eventId,
      messageId: l.messageId,
      userId: l.userId,
      displayName: l.name,
      text: l.text,
      sentAt: l.sentAt,
      fromSelf: l.fromSelf,
    }));
}

export function contextLine(m: ContextMessage): ChatLine {
  return {
    kind: 'message',
    eventId: m.eventId,
    messageId: m.messageId,
    userId: m.userId,
    name: m.displayName,
    text: m.text,
    sentAt: m.sentAt,
    fromSelf: m.fromSelf,
  };
}

export function messageLine(event: EventEnvelope<MessagePayload>, keepSegments: boolean): ChatLine {
  const p = event.payload;
  return {
    kind: 'message',
    eventId: event.id,
    messageId: p.messageId,
    userId: p.sender.userId,
    name: p.sender.displayName,
    ...(p.sender.card ? { card: p.sender.card } : {}),
    nickname: p.sender.nickname,
    role: p.sender.role,
    text: p.text,
    sentAt: p.sentAt,
    fromSelf: p.sender.userId === p.selfId,
    ...(keepSegments ? { segments: p.segments } : {}),
  };
}
