import { Inject, Injectable, Optional } from '@nestjs/common';
import {
  EpisodeJob,
  EventKind,
  isEmptyTurn,
  makeEvent,
  QunliError,
  type ContextMessage,
  type EventEnvelope,
  type EventOf,
  type MessagePayload,
  type StateTransition,
  type DecisionPayload,
  type EventTransitionedPayload,
  type GroupActorUpdatedPayload,
  type SchedulerTurnFacts,
  type ThreadIdlePayload,
  type ThreadUpdatedPayload,
  type TimerCancelledPayload,
  type TimerPurpose,
  type TimerScheduledPayload,
} from '@app/contracts';
import { checkedEpisodeJob, type StreamContext } from '@app/event-bus';
import { Clock, Metrics, QunliConfig } from '@app/platform';
import type { Counter, Histogram } from 'prom-client';
import type { AttentionPolicy } from '../decisions/attention.policy.js';
import { repliesInWindow } from '../actors/group-actor.js';
import { DEFAULT_TALK, messagesNeeded, react, readLateBy, type DecideContext } from '../decisions/event.decider.js';
import type { ThreadState } from '../threads/thread-linking.js';
import type {
  DecisionRecord,
  GroupState,
  JobSpec,
  SchedulerEffect,
  SchedulerSettings,
  TimerSpec,
  UnpublishedTurn,
} from '../decisions/group-state.js';
import { Dispatcher } from '../dispatch/dispatcher.service.js';
import { FairDispatchStore, type DispatchEntry } from '../dispatch/fair-dispatch.store.js';
import { EpisodeControlStore } from '../episodes/episode-control.store.js';
import { EpisodeActedStore } from '../episodes/episode-acted.store.js';
import { EpisodeJobStore } from '../episodes/episode-job.store.js';
import { TimerStore } from '../timers/timer.store.js';
import { ATTENTION_POLICY } from './attention.token.js';
import { KEYWORD_LOOKUP, type KeywordLookup } from '../keywords/keyword-lookup.js';
import { contextLine, GroupStateStore } from './group-state.store.js';
import { schedulerSettings } from './scheduler-settings.js';

function isEmpty(state: GroupState): boolean {
  return (
    state.ended.length === 0 &&
    Object.keys(state.events).length === 0 &&
    Object.keys(state.batches).length === 0 &&
    Object.keys(state.snoozed).length === 0 &&
    Object.keys(state.episodes).length === 0 &&
    Object.keys(state.timers).length === 0 &&
    Object.keys(state.threads ?? {}).length === 0 &&
    !state.unpublished?.length
  );
}

function threadSnapshot(thread: ThreadState, link: string): ThreadUpdatedPayload {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    threadId: thread.id,
    version: Math.max(1, thread.version),
    startedAt: iso(thread.startedAt),
    lastActivityAt: iso(thread.lastAt),
    participants: thread.participants.slice(0, 32),
    messages: thread.messages,
    botJoined: thread.botJoined,
    ...(thread.lastBotAt !== undefined ? { lastBotReplyAt: iso(thread.lastBotAt) } : {}),
    openQuestions: thread.openQuestions.slice(0, 8).map((q) => ({
      eventId: q.eventId,
      senderId: q.senderId,
      askedAt: iso(q.at),
      text: q.text.slice(0, 120),
    })),
    link,
  };
}

/** One thread, actor or timer fact of a turn, before it is known whether a move event carries it. */
type TurnFact =
  | { kind: typeof EventKind.ThreadIdle; payload: ThreadIdlePayload }
  | { kind: typeof EventKind.ThreadUpdated; payload: ThreadUpdatedPayload }
  | { kind: typeof EventKind.GroupActorUpdated; payload: GroupActorUpdatedPayload }
  | { kind: typeof EventKind.TimerScheduled; payload: TimerScheduledPayload }
  | { kind: typeof EventKind.TimerCancelled; payload: TimerCancelledPayload };

/** What `prefetch` started for one entry: the state's load and, when the state was in memory, the turn's reads. */
interface Prefetched {
  load: Promise<GroupState>;
  /** An @'s group window (its job is likely to need it). */
  recent?: Promise<ContextMessage[]>;
  /** The in-memory state the reads were planned on; they are used only if `load` returns this very state. */
  planned?: { state: GroupState; ids: ReadonlySet<string>; reads: Promise<TurnReads> };
}

/** The committed state with what cognition's act commits say (acted markers), and the held messages the turn needs. */
type TurnReads = [GroupState, Map<string, EventEnvelope<MessagePayload>>];

function isMessage(event: EventEnvelope): event is EventEnvelope<MessagePayload> {
  return event.kind === EventKind.MessageObserved || event.kind === EventKind.MessageDirect;
}

/** The moves of a turn by subject event, in the order the decider made them. */
type Moves = Map<string, { transitions: StateTransition[]; decision?: DecisionRecord }>;

function movesOf(effects: readonly SchedulerEffect[]): Moves {
  const moves: Moves = new Map();
  for (const effect of effects) {
    if (effect.type !== 'moved') continue;
    const entry = moves.get(effect.eventId) ?? { transitions: [] };
    entry.transitions.push(...effect.transitions);
    if (effect.decision) entry.decision = effect.decision;
    moves.set(effect.eventId, entry);
  }
  return moves;
}

/** Whether the turn decided `eventId` (its move carries a decision). */
function decidedNow(eventId: string, effects: readonly SchedulerEffect[]): boolean {
  return effects.some(
    (effect) => effect.type === 'moved' && effect.eventId === eventId && effect.decision !== undefined,
  );
}

/** Effects a deferrable message turn may have: its tracking, its moves, its batch, timers set, thread, actor count. */
const DEFERRABLE_EFFECTS = new Set<SchedulerEffect['type']>([
  'tracked',
  'moved',
  'batch',
  'timerSet',
  'thread',
  'actor',
]);

/**
 * Records a group keeps unpublished at most; a turn that would add one more publishes them all instead. Small: the
 * records are one field of the group state, rewritten whole when one is added, and a group with several senders
 * waiting at once mostly publishes its records on their own anyway.
 */
const UNPUBLISHED_KEPT = 4;

/**
 * A message handled later than this after it was appended (product ms) is published at once: its partition is
 * behind, so its group's later messages are already queued, and its decision will not be the group's next turn
 * that publishes (its record would be published on its own, after costing a write to the state and its removal).
 */
const DEFER_FRESH_MS = 500;

/**
 * One group event through the scheduler: load the group's state and the messages the decision needs, decide
 * (`event.decider.ts`, pure), then turn the facts into effects — published events, staged writes, timers, control
 * commands — that commit with the entry's acknowledgement. Dispatcher offers and withdrawals are made just before
 * the commit (idempotent per job id: a retried handler repeats them harmlessly); the dispatcher is woken after it.
 */
@Injectable()
export class GroupRuntime {
  private readonly settings: SchedulerSettings;
  private readonly scores: Histogram<'decision'>;
  private readonly records: Counter<'outcome'>;
  private readonly late: Counter;
  private readonly realMs = (productMs: number) => this.clock.real(productMs);

  constructor(
    private readonly states: GroupStateStore,
    private readonly timers: TimerStore,
    private readonly control: EpisodeControlStore,
    private readonly jobs: EpisodeJobStore,
    private readonly acted: EpisodeActedStore,
    private readonly dispatch: FairDispatchStore,
    private readonly dispatcher: Dispatcher,
    private readonly clock: Clock,
    @Inject(ATTENTION_POLICY) private readonly attention: AttentionPolicy,
    config: QunliConfig,
    metrics: Metrics,
    @Optional() @Inject(KEYWORD_LOOKUP) private readonly keywords?: KeywordLookup,
  ) {
    this.settings = schedulerSettings(config);
    this.scores = metrics.histogram({
      name: 'qunli_attention_score',
      help: 'Attention scores of scored decisions (forced ones carry none), by decision outcome',
      labelNames: ['decision'],
      buckets: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1],
    });
    this.records = metrics.counter({
      name: 'qunli_scheduler_turn_records_total',
      help:
        'Message turns recorded in the group state instead of published at once (deferred), and how they were ' +
        "published later: inside the message's own next move event (merged) or as their own event (published)",
      labelNames: ['outcome'],
    });
    this.late = metrics.counter({
      name: 'qunli_scheduler_ambient_late_total',
      help:
        'Ambient messages read more than QUNLI_AMBIENT_LATE_MS after they were sent and decided in that turn, ' +
        'without a debounce wait (the scheduler was behind)',
    });
  }

  /**
   * Started in the same tick as the reader's duplicate check (`ConsumerOptions.prefetch`), so these reads share its
   * round trip: the group's state, and — when the state is in memory — the acted markers and held messages the turn
   * will need. Reads only; `handle` checks that what it needs is what was planned.
   */
  prefetch(event: EventEnvelope, ctx: StreamContext): void {
    const groupId = event.groupId ?? '';
    const known = this.states.peek(ctx, groupId);
    const load = this.states.load(ctx, groupId);
    load.catch(() => undefined);
    const prefetched: Prefetched = { load };
    if (event.kind === EventKind.MessageDirect) {
      prefetched.recent = this.states.recent(ctx, groupId);
      prefetched.recent.catch(() => undefined);
    }
    if (known) {
      const ids = messagesNeeded(event, known, this.settings.threads, this.clock.nowMs());
      const reads = this.reads(ctx, known, ids);
      reads.catch(() => undefined);
      prefetched.planned = { state: known, ids: new Set(ids), reads };
    }
    ctx.prefetched = prefetched;
  }

  async handle(event: EventEnvelope, ctx: StreamContext): Promise<void> {
    const groupId = event.groupId ?? '';
    const prefetched = ctx.prefetched as Prefetched | undefined;
    ctx.prefetched = undefined;
    // An @ is likely to need the group's recent window for its job: read it together with the state.
    let recent: Promise<ContextMessage[]> | undefined =
      prefetched?.recent ?? (event.kind === EventKind.MessageDirect ? this.states.recent(ctx, groupId) : undefined);
    // Not every @ needs it; a failure only matters to the one that awaits it.
    recent?.catch(() => undefined);
    if (event.kind === EventKind.KeywordLexiconVersioned) {
      await this.keywords?.catchUp?.((event as EventOf<'keyword.lexicon.versioned'>).payload);
    }
    const committed = await (prefetched?.load ?? this.states.load(ctx, groupId));
    const now = this.clock.nowMs();
    const needed = messagesNeeded(event, committed, this.settings.threads, now);
    const planned = prefetched?.planned?.state === committed ? prefetched.planned : undefined;
    const [before, messages] = await (planned?.reads ?? this.reads(ctx, committed, needed));
    // Planned a moment earlier: a thread boundary crossed since then can need a message the plan did not read.
    const missed = planned ? needed.filter((id) => !planned.ids.has(id)) : [];
    if (missed.length > 0) for (const [id, m] of await this.states.heldMessages(ctx, missed)) messages.set(id, m);
    if (isMessage(event)) messages.set(event.id, event);
    const decideContext: DecideContext = {
      now,
      groupId: event.groupId,
      settings: this.settings,
      attention: this.attention,
      messages,
      realMs: this.realMs,
    };
    const { state, effects } = react(event, before, decideContext);
    if (readLateBy(event, decideContext) !== undefined && decidedNow(event.id, effects)) this.late.inc();

    this.keepRecent(event, ctx);
    const window = () => (recent ??= this.states.recent(ctx, groupId));
    await this.dispatchSide(event, effects, messages, ctx, window);
    const moves = movesOf(effects);
    const facts: TurnFact[] = [];
    this.publishAttention(event, effects, state, now, facts);
    this.writeTimers(event, effects, before, now, ctx, facts);
    // A message that only starts waiting for its sender's debounce is recorded in the state and published with the
    // group's next turn that publishes (ADR 0033), before anything else of that turn (a record inside its own
    // message's move event when that is the carrier).
    const pending = before.unpublished ?? [];
    const deferred = this.deferrable(event, effects, moves, facts, state, pending.length, now);
    let after = state;
    if (deferred) {
      after = { ...state, unpublished: [...pending, deferred] };
      this.countRecords(ctx, 'deferred');
    } else if (pending.length > 0 && (moves.size > 0 || facts.length > 0)) {
      const merged = this.mergeable(pending, moves, facts);
      for (const record of pending) if (record !== merged) this.publishRecord(event, record, ctx);
      if (merged) {
        const move = moves.get(merged.subjectEventId)!;
        move.transitions = [...merged.transitions, ...move.transitions];
        facts.unshift(
          ...merged.threads.map((payload) => ({ kind: EventKind.ThreadUpdated, payload }) as const),
          ...merged.timersScheduled.map((payload) => ({ kind: EventKind.TimerScheduled, payload }) as const),
        );
        this.countRecords(ctx, 'merged');
      }
      after = { ...state, unpublished: [] };
    }
    if (!deferred) {
      // The turn's thread, actor and timer facts ride on its last move event when it has one (ADR-0024).
      const carrier = this.publishMoves(event, moves, now, ctx);
      this.publishFacts(event, facts, carrier, now, ctx);
    }
    for (const effect of effects) {
      if (effect.type === 'control') {
        this.control.stage(
          ctx,
          makeEvent({
            kind: EventKind.EpisodeControl,
            groupId: event.groupId,
            source: 'scheduler',
            cause: event,
            createdAt: new Date(now),
            evidenceMessageIds: effect.control.eventIds?.slice(0, 256) ?? [],
            payload: effect.control,
          }),
        );
      } else if (effect.type === 'episodeEnded') {
        this.jobs.stageDrop(ctx, effect.episodeId);
      }
    }
    this.holdMessages(before, after, effects, messages, ctx);
    this.states.stageSave(ctx, groupId, committed, after, isEmpty(committed));
    if (effects.some((e) => e.type === 'episodeOffered' || e.type === 'released' || e.type === 'withdrawn')) {
      ctx.afterCommit(async () => {
        this.dispatcher.kick();
        await this.dispatcher.wakeAll();
      });
    }
  }

  /**
   * The record of this turn when it may wait unpublished (ADR 0033): a message whose only moves take it into its
   * sender's debounce batch, in a turn whose only facts are thread snapshots and timers set. Anything else a turn
   * says (a decision, another event's move, an idle thread, a cancelled timer, the actor's budget) is published
   * when it happens, with every earlier record before it.
   */
  private deferrable(
    event: EventEnvelope,
    effects: readonly SchedulerEffect[],
    moves: Moves,
    facts: readonly TurnFact[],
    after: GroupState,
    pending: number,
    now: number,
  ): UnpublishedTurn | undefined {
    if (!isMessage(event) || pending >= UNPUBLISHED_KEPT || moves.size !== 1) return undefined;
    if (now - Date.parse(event.createdAt) > DEFER_FRESH_MS) return undefined;
    const move = moves.get(event.id);
    if (!move || move.decision || after.events[event.id]?.state !== 'scheduled') return undefined;
    if (!Object.values(after.batches).some((batch) => batch.eventIds.includes(event.id))) return undefined;
    if (!effects.every((effect) => DEFERRABLE_EFFECTS.has(effect.type))) return undefined;
    const threads: ThreadUpdatedPayload[] = [];
    const timersScheduled: TimerScheduledPayload[] = [];
    const setAt = new Date(now).toISOString();
    for (const fact of facts) {
      if (fact.kind === EventKind.ThreadUpdated) threads.push(fact.payload);
      else if (fact.kind === EventKind.TimerScheduled) timersScheduled.push({ ...fact.payload, setAt });
      else return undefined;
    }
    return {
      subjectEventId: event.id,
      correlationId: event.correlationId,
      actorIds: event.actorIds,
      priority: event.priority,
      at: now,
      transitions: move.transitions,
      threads,
      timersScheduled,
    };
  }

  /**
   * The unpublished record that can ride in this turn's carrier: the carrier is that message's own move event, none
   * of the record's threads goes idle in this turn (a carrier's idle threads unfold before its snapshots, which would
   * put the record's older snapshot after the idle one), and no later record sets one of its timers again (the later
   * setting must stay the later one in the log). The other records are published on their own, before the carrier;
   * among records only those two orders matter (thread snapshots fold by version).
   */
  private mergeable(
    pending: readonly UnpublishedTurn[],
    moves: Moves,
    facts: readonly TurnFact[],
  ): UnpublishedTurn | undefined {
    let carrier: string | undefined;
    for (const subject of moves.keys()) carrier = subject;
    const at = pending.findIndex((record) => record.subjectEventId === carrier);
    if (at < 0) return undefined;
    const record = pending[at]!;
    const idle = new Set<string>();
    for (const fact of facts) if (fact.kind === EventKind.ThreadIdle) idle.add(fact.payload.threadId);
    if (record.threads.some((thread) => idle.has(thread.threadId))) return undefined;
    const timers = new Set(record.timersScheduled.map((timer) => timer.timerId));
    const later = pending.slice(at + 1);
    return later.some((r) => r.timersScheduled.some((timer) => timers.has(timer.timerId))) ? undefined : record;
  }

  /** An unpublished record as the `event.transitioned` its turn would have published, dated at that turn. */
  private publishRecord(event: EventEnvelope, record: UnpublishedTurn, ctx: StreamContext): void {
    const turn: SchedulerTurnFacts = {};
    if (record.threads.length > 0) turn.threads = record.threads;
    if (record.timersScheduled.length > 0) turn.timersScheduled = record.timersScheduled;
    ctx.publish(
      makeEvent({
        kind: EventKind.EventTransitioned,
        groupId: event.groupId,
        source: 'scheduler',
        cause: { id: record.subjectEventId, correlationId: record.correlationId },
        createdAt: new Date(record.at),
        actorIds: record.actorIds,
        evidenceMessageIds: [record.subjectEventId],
        priority: record.priority,
        payload: {
          subjectEventId: record.subjectEventId,
          transitions: record.transitions,
          ...(isEmptyTurn(turn) ? {} : { turn }),
        },
      }),
    );
    this.countRecords(ctx, 'published');
  }

  /** Counted once the turn is committed: a failed or duplicate turn recorded nothing. */
  private countRecords(ctx: StreamContext, outcome: 'deferred' | 'merged' | 'published'): void {
    ctx.afterCommit(() => {
      if (ctx.applied) this.records.inc({ outcome });
    });
  }

  /** The acted markers of the state's open episodes and the held messages `ids`, in one round trip. */
  private reads(ctx: StreamContext, committed: GroupState, ids: string[]): Promise<TurnReads> {
    return Promise.all([this.acted.learn(ctx, committed), this.states.heldMessages(ctx, ids)]);
  }

  /** Every message joins the group's recent window; so do the bot's own delivered lines. */
  private keepRecent(event: EventEnvelope, ctx: StreamContext): void {
    if (!event.groupId) return;
    if (isMessage(event)) {
      this.states.stageRecent(ctx, event.groupId, contextLine(event));
    } else if (event.kind === EventKind.MessageSent) {
      const { payload } = event as EventOf<'message.sent'>;
      const line: ContextMessage = {
        eventId: event.id,
        messageId: payload.onebotMessageId,
        userId: 'self',
        displayName: 'self',
        text: payload.text,
        sentAt: Math.floor(Date.parse(event.createdAt) / 1000),
        fromSelf: true,
      };
      this.states.stageRecent(ctx, event.groupId, line);
    }
  }

  /** Withdraw and release first (a preempted run frees its slot), then offer the new runs. */
  private async dispatchSide(
    event: EventEnvelope,
    effects: SchedulerEffect[],
    messages: ReadonlyMap<string, EventEnvelope<MessagePayload>>,
    ctx: StreamContext,
    window: () => Promise<ContextMessage[]>,
  ): Promise<void> {
    for (const effect of effects) {
      if (effect.type === 'withdrawn') await this.dispatch.withdraw(effect.jobId);
      else if (effect.type === 'released') await this.dispatch.release(effect.jobId);
    }
    for (const effect of effects) {
      if (effect.type !== 'episodeOffered') continue;
      const job = await this.buildJob(effect.job, messages, ctx, effect.episode.subjects, window);
      if (effect.job.mode === 'start') this.jobs.stageKeep(ctx, job);
      const entry: DispatchEntry = {
        jobId: effect.job.jobId,
        episodeId: effect.job.episodeId,
        groupId: event.groupId,
        lane: effect.job.lane,
        priority: effect.job.priority,
        mode: effect.job.mode,
        deadline: effect.job.deadline,
        cost: 1,
        job,
      };
      await this.dispatch.offer(entry);
    }
  }

  private async buildJob(
    spec: JobSpec,
    messages: ReadonlyMap<string, EventEnvelope<MessagePayload>>,
    ctx: StreamContext,
    subjects: readonly string[],
    window: () => Promise<ContextMessage[]>,
  ): Promise<EpisodeJob> {
    const deadline = new Date(spec.deadline).toISOString();
    if (spec.mode === 'resume') {
      const start = await this.jobs.load(ctx.partition, spec.episodeId);
      if (!start) {
        throw new QunliError('SCHEDULER.EPISODE_JOB_MISSING', `no start job kept for ${spec.episodeId}`, {
          episodeId: spec.episodeId,
        });
      }
      // The continuation sees the group as it is now: what was said while the episode waited (cognition's
      // contract: a resumed episode takes in the messages that came meanwhile).
      return checkedEpisodeJob({
        ...start,
        context: await window(),
        mode: 'resume',
        deadline,
        controlSeq: spec.controlSeq,
        lane: spec.lane,
        ...(spec.resume ? { resume: spec.resume } : {}),
      });
    }
    const envelope = (id: string) => {
      const found = messages.get(id);
      if (!found) {
        throw new QunliError('SCHEDULER.MESSAGE_MISSING', `the held message ${id} of ${spec.episodeId} is gone`, {
          episodeId: spec.episodeId,
          eventId: id,
        });
      }
      return found;
    };
    // The episode's thread travels on its messages, so cognition and memory see the thread attention linked.
    const inThread = (e: EventEnvelope<MessagePayload>) => (spec.thread ? { ...e, threadId: spec.thread } : e);
    return checkedEpisodeJob({
      episodeId: spec.episodeId,
      groupId: spec.groupId,
      mode: 'start',
      trigger: inThread(envelope(spec.triggerEventId)),
      fragments: spec.fragmentIds.map(envelope).map(inThread),
      ...(spec.inherited ? { inherited: spec.inherited } : {}),
      context: GroupStateStore.contextOf(await window(), new Set(subjects)),
      deadline,
      controlSeq: 1,
      lane: spec.lane,
    });
  }

  /**
   * One `decision.made` (or `event.transitioned`) per subject event, with all its moves of this turn. Returns the
   * payload of the last one published, which carries the turn's other facts.
   */
  private publishMoves(
    event: EventEnvelope,
    moves: Moves,
    now: number,
    ctx: StreamContext,
  ): { turn?: SchedulerTurnFacts } | undefined {
    const createdAt = new Date(now);
    let carrier: { turn?: SchedulerTurnFacts } | undefined;
    for (const [subjectEventId, { transitions, decision }] of moves) {
      const common = {
        groupId: event.groupId,
        source: 'scheduler',
        cause: event,
        createdAt,
        actorIds: isMessage(event) && event.id === subjectEventId ? event.actorIds : [],
        evidenceMessageIds: [subjectEventId],
        priority: event.priority,
      };
      if (decision) {
        const score = decision.features.score;
        if (typeof score === 'number' && Number.isFinite(score))
          this.scores.observe({ decision: decision.outcome }, score);
        const payload: DecisionPayload = {
          subjectEventId,
          outcome: decision.outcome,
          reason: decision.reason,
          features: decision.features,
          transitions,
          ...(decision.episodeId ? { episodeId: decision.episodeId } : {}),
          ...(decision.threadId !== undefined ? { threadId: decision.threadId } : {}),
          keywordHits: decision.keywordHits ?? [],
        };
        ctx.publish(makeEvent({ ...common, kind: EventKind.DecisionMade, payload }));
        carrier = payload;
      } else {
        const payload: EventTransitionedPayload = { subjectEventId, transitions };
        ctx.publish(makeEvent({ ...common, kind: EventKind.EventTransitioned, payload }));
        carrier = payload;
      }
    }
    return carrier;
  }

  /**
   * The turn's thread, actor and timer facts: inside the carrier (the turn's last move event), or — a turn that
   * moved no event (a thread going idle, a cooldown) — as the standalone kinds, in the same order.
   */
  private publishFacts(
    event: EventEnvelope,
    facts: TurnFact[],
    carrier: { turn?: SchedulerTurnFacts } | undefined,
    now: number,
    ctx: StreamContext,
  ): void {
    if (facts.length === 0) return;
    if (carrier) {
      const turn: SchedulerTurnFacts = {};
      for (const fact of facts) {
        switch (fact.kind) {
          case EventKind.ThreadIdle:
            (turn.threadsIdle ??= []).push(fact.payload);
            break;
          case EventKind.ThreadUpdated:
            (turn.threads ??= []).push(fact.payload);
            break;
          case EventKind.GroupActorUpdated:
            turn.actor = fact.payload;
            break;
          case EventKind.TimerScheduled:
            (turn.timersScheduled ??= []).push(fact.payload);
            break;
          case EventKind.TimerCancelled:
            (turn.timersCancelled ??= []).push(fact.payload);
            break;
        }
      }
      carrier.turn = turn;
      return;
    }
    const common = { groupId: event.groupId, source: 'scheduler', cause: event, createdAt: new Date(now) };
    for (const fact of facts) {
      const threadId =
        fact.kind === EventKind.ThreadIdle || fact.kind === EventKind.ThreadUpdated ? fact.payload.threadId : undefined;
      ctx.publish(
        makeEvent({
          ...common,
          kind: fact.kind,
          payload: fact.payload,
          ...(threadId !== undefined ? { threadId } : {}),
        }),
      );
    }
  }

  /**
   * Threads and the group actor as facts in the log (so their read models rebuild on replay): the newest snapshot
   * of each thread this turn changed, each thread that went idle, and the actor when a reply or an ambient episode
   * changed its budget.
   */
  private publishAttention(
    event: EventEnvelope,
    effects: SchedulerEffect[],
    after: GroupState,
    now: number,
    facts: TurnFact[],
  ): void {
    const iso = (ms: number) => new Date(ms).toISOString();
    const changed = new Map<string, Extract<SchedulerEffect, { type: 'thread' }>>();
    const idle = new Set<string>();
    let actorReason: string | undefined;
    for (const effect of effects) {
      if (effect.type === 'thread') {
        const earlier = changed.get(effect.thread.id);
        changed.set(effect.thread.id, { ...effect, subjectEventId: effect.subjectEventId ?? earlier?.subjectEventId });
      } else if (effect.type === 'threadIdle') {
        idle.add(effect.thread.id);
        facts.push({
          kind: EventKind.ThreadIdle,
          payload: { ...threadSnapshot(effect.thread, 'idle'), idleAt: iso(now) },
        });
      } else if (effect.type === 'actor' && effect.reason !== undefined) {
        actorReason = effect.reason;
      }
    }
    for (const [threadId, effect] of changed) {
      if (idle.has(threadId) && !after.threads[threadId]) continue;
      const payload = threadSnapshot(effect.thread, effect.link);
      if (effect.subjectEventId !== undefined) payload.subjectEventId = effect.subjectEventId;
      facts.push({ kind: EventKind.ThreadUpdated, payload });
    }
    if (actorReason !== undefined) {
      const talk = this.attention.talk?.(event.groupId) ?? DEFAULT_TALK;
      const actor = after.actor;
      const inFlight = Object.values(after.episodes).filter(
        (e) => e.lane === 'ambient' && e.status !== 'replied' && !e.delivered,
      );
      facts.push({
        kind: EventKind.GroupActorUpdated,
        payload: {
          // Product time orders the actor's snapshots even when an idle group's state was dropped and rebuilt.
          version: Math.max(1, now),
          ...(actor.lastBotReplyAt !== undefined ? { lastBotReplyAt: iso(actor.lastBotReplyAt) } : {}),
          ...(actor.lastPartnerId !== undefined ? { lastPartnerId: actor.lastPartnerId } : {}),
          repliesInWindow: repliesInWindow(actor, now, talk) + inFlight.length,
          budget: talk.budget,
          ...(actor.cooldownUntil !== undefined ? { cooldownUntil: iso(actor.cooldownUntil) } : {}),
          activeThreads: Object.keys(after.threads).slice(0, 32),
          activeEvents: Object.keys(after.events).length,
          reason: actorReason.slice(0, 200),
        },
      });
    }
  }

  /** The net timer changes of this turn: a timer set and cancelled again in one turn never reaches Redis. */
  private writeTimers(
    event: EventEnvelope,
    effects: SchedulerEffect[],
    before: GroupState,
    now: number,
    ctx: StreamContext,
    facts: TurnFact[],
  ): void {
    const last = new Map<string, { set?: TimerSpec; cancel?: { purpose: TimerPurpose; reason: string } }>();
    for (const effect of effects) {
      if (effect.type === 'timerSet') last.set(effect.timer.timerId, { set: effect.timer });
      else if (effect.type === 'timerCancelled') {
        last.set(effect.timerId, { cancel: { purpose: effect.purpose, reason: effect.reason } });
      }
    }
    for (const [timerId, op] of last) {
      if (op.set) {
        this.timers.stageSet(ctx, event.groupId, op.set, now);
        facts.push({
          kind: EventKind.TimerScheduled,
          payload: {
            timerId,
            purpose: op.set.purpose,
            dueAt: new Date(op.set.dueAt).toISOString(),
            ...(op.set.subjectEventId !== undefined ? { subjectEventId: op.set.subjectEventId } : {}),
            ...(op.set.episodeId !== undefined ? { episodeId: op.set.episodeId } : {}),
          },
        });
      } else if (op.cancel && before.timers[timerId]) {
        this.timers.stageCancel(ctx, timerId);
        facts.push({
          kind: EventKind.TimerCancelled,
          payload: { timerId, purpose: op.cancel.purpose, reason: op.cancel.reason },
        });
      }
    }
  }

  /** Hold the envelopes of messages that are still undecided; let go of the ones that are settled. */
  private holdMessages(
    before: GroupState,
    after: GroupState,
    effects: SchedulerEffect[],
    messages: ReadonlyMap<string, EventEnvelope<MessagePayload>>,
    ctx: StreamContext,
  ): void {
    for (const effect of effects) {
      if (effect.type !== 'tracked' || !after.events[effect.event.id]) continue;
      const envelope = messages.get(effect.event.id);
      if (envelope) this.states.stageHold(ctx, envelope);
    }
    this.states.stageRelease(
      ctx,
      Object.keys(before.events).filter((id) => !after.events[id]),
    );
  }
}
