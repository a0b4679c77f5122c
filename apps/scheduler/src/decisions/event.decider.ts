import {
  EventKind,
  episodeIdFor,
  episodeJobId,
  type DecisionKeywordHit,
  type EpisodeControlPayload,
  type EventEnvelope,
  type EventOf,
  type EventState,
  type MessagePayload,
  type ResumeCause,
  type TimerPurpose,
} from '@app/contracts';
import { initialActor, observeMessage, recordReply, type TalkSettings } from '../actors/group-actor.js';
import { EventRecord, isTerminal } from '../events/event-state.machine.js';
import {
  botReplied,
  joinThread,
  linkMessage,
  liveThreads,
  type LinkInput,
  type ThreadSettings,
  type ThreadState,
} from '../threads/thread-linking.js';
import type { AttentionPolicy, AttentionVerdict } from './attention.policy.js';
import {
  ENDED_KEPT,
  MAIN_THREAD,
  type DebounceBatch,
  type DecisionRecord,
  type EpisodeEntry,
  type GroupState,
  type SchedulerEffect,
  type SchedulerSettings,
  type TimerSpec,
  type TrackedEvent,
} from './group-state.js';
import { DEFAULT_THREAD_SETTINGS } from '../threads/thread-linking.js';

/** Snoozed batches one keyword lexicon change may wake before their timers. */
export const KEYWORD_WAKE_BUDGET = 2;

/**
 * How often an event is decided again because the episode that had it replied without covering it. Bounded so
 * that episodes that keep replying past it (a sticker, a reply to someone else) cannot chain for ever.
 */
export const MAX_REDECISIONS = 1;

export { initialState } from './group-state.js';

/*
 * The scheduler's per-event decision as a decider (emmett's decide / evolve / initialState): `decide(event, state)`
 * returns the facts that follow from one log event for one group; `evolve(state, fact)` folds them into the group's
 * state. Pure: time, settings, the attention policy and the held messages come in through `DecideContext`.
 *
 * Preemption (ADR 0007):
 * - the same sender goes on while their episode has not acted → `interrupt` it (the episode takes the message in),
 *   at most `maxInterrupts` times;
 * - a new deliberate batch of a sender whose earlier episode has not acted → `supersede` that episode; the new one
 *   carries its events as fragments (one answer for all of them);
 * - a batch addressed to the bot → `supersede` the group's ambient episodes that have not acted (their events end
 *   `skipped` with that reason): @ takes the group's turn.
 *
 * An episode that replied answers only the events its replies covered (`answeredEventIds` on its sends and its
 * completion): those end `replied` when a reply is delivered; the others — an interrupt committed after the
 * episode's last look at its control record, fragments beyond what its job carried — are decided again.
 */

export interface DecideContext {
  /** Product time, epoch ms. */
  now: number;
  groupId: string | null;
  settings: SchedulerSettings;
  attention: AttentionPolicy;
  /** Held envelopes the decision may need (`messagesNeeded`), and the input itself when it is a message. */
  messages: ReadonlyMap<string, EventEnvelope<MessagePayload>>;
  /** A product duration in real ms (`Clock.real`; the identity when time is not scaled). */
  realMs?: (productMs: number) => number;
}

/**
 * How late (real ms) the scheduler reads an ambient message that it is to decide without its debounce wait — read
 * more than `ambientLateMs` after it was sent — or undefined when it is not that late (or is addressed to the bot).
 */
export function readLateBy(event: EventEnvelope, ctx: DecideContext): number | undefined {
  const limit = ctx.settings.ambientLateMs;
  if (!(limit > 0) || event.kind !== EventKind.MessageObserved) return undefined;
  if ((event.payload as MessagePayload).directReason !== undefined) return undefined;
  const sent = Date.parse(event.createdAt);
  if (Number.isNaN(sent)) return undefined;
  const late = ctx.realMs ? ctx.realMs(ctx.now - sent) : ctx.now - sent;
  return late > limit ? late : undefined;
}

/**
 * Failures worth another attempt, within the event's own deadline: the model or the network was unavailable, or
 * the episode ran out of time — a slow model, or a worker that died mid-episode and whose job waited for its lock
 * to expire — not that the answer was unusable.
 */
const RETRYABLE_CODES = new Set(['LLM.TIMEOUT', 'LLM.UNREACHABLE', 'LLM.HTTP_ERROR', 'EPISODE.DEADLINE_EXCEEDED']);

const LINK_TEXT: Record<string, string> = {
  new: 'a new thread',
  reply: 'reply chain',
  at: '@ chain',
  speaker: 'the same speaker going on',
  overlap: 'shared topic words',
  flow: 'the conversation going on',
  explicit: 'given by the producer',
};

export function batchKey(thread: string, senderId: string): string {
  return `${thread}\u0000${senderId}`;
}

function hitsOf(verdict: AttentionVerdict): { keywordHits?: DecisionKeywordHit[] } {
  return verdict.keywordHits ? { keywordHits: verdict.keywordHits } : {};
}

/** The ids of `a`, then those of `b` it lacks, each once. */
function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}

function isMessage(event: EventEnvelope): event is EventEnvelope<MessagePayload> {
  return event.kind === EventKind.MessageObserved || event.kind === EventKind.MessageDirect;
}

/** Talk settings when the attention policy has none (a reply machine): one window, no cooldown. */
export const DEFAULT_TALK: TalkSettings = {
  talkValue: 1,
  adjust: 1,
  windowMs: 30 * 60_000,
  budget: 1000,
  cooldownMs: 0,
};

/** What thread linking reads of a message. */
export function linkInputOf(event: EventEnvelope<MessagePayload>, at: number): LinkInput {
  const p = event.payload;
  const atUserIds = p.segments
    .filter((s) => s.type === 'at' && s.data.qq !== undefined && s.data.qq !== p.selfId && s.data.qq !== 'all')
    .map((s) => s.data.qq!);
  const input: LinkInput = {
    eventId: event.id,
    messageId: p.messageId,
    senderId: p.sender.userId,
    text: p.text,
    at,
    atUserIds,
    addressesBot: p.directReason !== undefined || event.kind === EventKind.MessageDirect,
  };
  if (p.replyToMessageId !== undefined) input.replyToMessageId = p.replyToMessageId;
  if (event.threadId !== undefined && event.threadId !== '') input.explicitThread = event.threadId;
  return input;
}

/** The thread a message joins in this group state (the same answer `decide` will give). */
export function threadOf(
  event: EventEnvelope<MessagePayload>,
  state: GroupState,
  settings: ThreadSettings,
  now: number,
): string {
  const known = state.events[event.id];
  if (known) return known.thread;
  if (event.groupId === null) return event.threadId ?? MAIN_THREAD;
  return linkMessage(state.threads, linkInputOf(event, now), settings).threadId;
}

function tracked(event: EventEnvelope<MessagePayload>, thread: string): TrackedEvent {
  const t: TrackedEvent = {
    id: event.id,
    messageId: event.payload.messageId,
    senderId: event.payload.sender.userId,
    thread,
    direct: event.kind === EventKind.MessageDirect || event.payload.directReason !== undefined,
    priority: event.priority,
    state: 'captured',
    seq: 0,
  };
  if (event.deadline !== undefined) t.deadlineAt = Date.parse(event.deadline);
  return t;
}

/** Ids of held messages `decide` may read for this event (the adapter loads them first). */
export function messagesNeeded(
  event: EventEnvelope,
  state: GroupState,
  threads: ThreadSettings = DEFAULT_THREAD_SETTINGS,
  now: number = Date.parse(event.createdAt),
): string[] {
  const ids = new Set<string>();
  const episodeSubjects = (sender: string, thread: string) => {
    for (const e of Object.values(state.episodes)) {
      if (e.senderId === sender && e.thread === thread) e.subjects.forEach((id) => ids.add(id));
    }
  };
  if (isMessage(event)) {
    const sender = event.payload.sender.userId;
    const thread = threadOf(event, state, threads, now);
    state.batches[batchKey(thread, sender)]?.eventIds.forEach((id) => ids.add(id));
    episodeSubjects(sender, thread);
  } else if (event.kind === EventKind.TimerFired) {
    const p = (event as EventOf<'timer.fired'>).payload;
    for (const batch of Object.values(state.batches)) {
      if (batch.timerId === p.timerId) {
        batch.eventIds.forEach((id) => ids.add(id));
        episodeSubjects(batch.senderId, batch.thread);
      }
    }
    for (const snoozed of Object.values(state.snoozed)) {
      if (snoozed.timerId === p.timerId) {
        snoozed.eventIds.forEach((id) => ids.add(id));
        episodeSubjects(snoozed.senderId, snoozed.thread);
      }
    }
    if (p.subjectEventId !== undefined) {
      ids.add(p.subjectEventId);
      const t = state.events[p.subjectEventId];
      if (t) episodeSubjects(t.senderId, t.thread);
    }
    if (p.episodeId !== undefined) state.episodes[p.episodeId]?.subjects.forEach((id) => ids.add(id));
  } else if (event.kind === EventKind.EpisodeCompleted) {
    // The events a replied episode did not cover are decided again, and may go to a new episode.
    const p = (event as EventOf<'episode.completed'>).payload;
    const episode = state.episodes[p.episodeId];
    if (episode && p.outcome === 'replied' && p.answeredEventIds !== undefined) {
      const covered = new Set([...(episode.covered ?? []), ...p.answeredEventIds]);
      if (episode.subjects.some((id) => !covered.has(id))) {
        episode.subjects.forEach((id) => ids.add(id));
        episodeSubjects(episode.senderId, episode.thread);
      }
    }
  } else if (event.kind === EventKind.KeywordLexiconVersioned) {
    // A lexicon change may wake snoozed batches (keywordsChanged): their messages are judged again.
    for (const snoozed of Object.values(state.snoozed)) {
      snoozed.eventIds.forEach((id) => ids.add(id));
      episodeSubjects(snoozed.senderId, snoozed.thread);
    }
  }
  return [...ids];
}

export function evolve(state: GroupState, effect: SchedulerEffect): GroupState {
  const draft = new StateDraft(state);
  draft.apply(effect);
  return draft.state;
}

/** The keyed maps of a group state. */
type StateMap = 'events' | 'batches' | 'snoozed' | 'episodes' | 'timers' | 'threads';

/**
 * `evolve` for a whole turn: the effects fold into one private copy of the state, each map copied at most once
 * (on its first change) and changed in place after that. The state it started from is never touched, and the
 * result equals folding `evolve` effect by effect — where that copied every map an effect touched, once per
 * effect (a busy group's turn copied its live events several times over).
 */
class StateDraft {
  private copy: GroupState | undefined;
  private readonly copied = new Set<StateMap>();

  constructor(private readonly base: GroupState) {}

  get state(): GroupState {
    return this.copy ?? this.base;
  }

  private own(): GroupState {
    return (this.copy ??= { ...this.base });
  }

  private map<K extends StateMap>(key: K): GroupState[K] {
    const copy = this.own();
    if (!this.copied.has(key)) {
      copy[key] = { ...copy[key] };
      this.copied.add(key);
    }
    return copy[key];
  }

  apply(effect: SchedulerEffect): void {
    const state = this.state;
    switch (effect.type) {
      case 'tracked':
        this.map('events')[effect.event.id] = effect.event;
        return;
      case 'redecided': {
        const current = state.events[effect.eventId];
        if (!current) return;
        this.map('events')[effect.eventId] = { ...current, redecided: (current.redecided ?? 0) + 1 };
        return;
      }
      case 'moved': {
        const current = state.events[effect.eventId];
        const last = effect.transitions[effect.transitions.length - 1];
        if (!current || !last) return;
        const events = this.map('events');
        if (isTerminal(last.to)) delete events[effect.eventId];
        else events[effect.eventId] = { ...current, state: last.to, seq: last.seq };
        return;
      }
      case 'batch': {
        const batches = this.map('batches');
        if (effect.batch) batches[effect.key] = effect.batch;
        else delete batches[effect.key];
        return;
      }
      case 'snoozed': {
        const snoozed = this.map('snoozed');
        if (effect.snooze) snoozed[effect.key] = effect.snooze;
        else delete snoozed[effect.key];
        return;
      }
      case 'timerSet':
        this.map('timers')[effect.timer.timerId] = { purpose: effect.timer.purpose, dueAt: effect.timer.dueAt };
        return;
      case 'timerCancelled':
      case 'timerFired':
        delete this.map('timers')[effect.timerId];
        return;
      case 'episodeOffered':
      case 'episodeUpdated':
        this.map('episodes')[effect.episode.id] = effect.episode;
        return;
      case 'episodeEnded': {
        delete this.map('episodes')[effect.episodeId];
        const ended = [...state.ended.filter((id) => id !== effect.episodeId), effect.episodeId].slice(-ENDED_KEPT);
        this.own().ended = ended;
        return;
      }
      case 'control': {
        const episode = state.episodes[effect.control.episodeId];
        if (!episode || episode.seq >= effect.control.seq) return;
        this.map('episodes')[episode.id] = { ...episode, seq: effect.control.seq };
        return;
      }
      case 'withdrawn':
      case 'released':
        return;
      case 'thread':
        this.map('threads')[effect.thread.id] = effect.thread;
        return;
      case 'threadIdle':
        delete this.map('threads')[effect.thread.id];
        return;
      case 'actor':
        this.own().actor = effect.actor;
        return;
    }
  }
}

export function decide(event: EventEnvelope, state: GroupState, ctx: DecideContext): SchedulerEffect[] {
  const turn = new Turn(state, ctx);
  turn.on(event);
  return turn.effects;
}

/** Decide and fold: the group's state after `event`, with the facts that got it there. */
export function react(
  event: EventEnvelope,
  state: GroupState,
  ctx: DecideContext,
): { state: GroupState; effects: SchedulerEffect[] } {
  const turn = new Turn(state, ctx);
  turn.on(event);
  return { state: turn.state, effects: turn.effects };
}

/** One decision in progress: effects are folded as they are emitted, so later steps see their result. */
class Turn {
  readonly effects: SchedulerEffect[] = [];
  private readonly draft: StateDraft;

  constructor(
    state: GroupState,
    private readonly ctx: DecideContext,
  ) {
    this.draft = new StateDraft(state);
  }

  /** The state with every effect emitted so far folded in. */
  get state(): GroupState {
    return this.draft.state;
  }

  private get now(): number {
    return this.ctx.now;
  }

  private get settings(): SchedulerSettings {
    return this.ctx.settings;
  }

  private emit(effect: SchedulerEffect): void {
    this.effects.push(effect);
    this.draft.apply(effect);
  }

  on(event: EventEnvelope): void {
    if (isMessage(event)) return this.onMessage(event);
    switch (event.kind) {
      case EventKind.TimerFired:
        return this.onTimer(event as EventOf<'timer.fired'>);
      case EventKind.EpisodeControl:
        return this.onControl(event as EventOf<'episode.control'>);
      case EventKind.ActionSend:
        return this.onAction(event as EventOf<'action.send'>);
      case EventKind.EpisodeCompleted:
        return this.onCompleted(event as EventOf<'episode.completed'>);
      case EventKind.EpisodeWaiting:
        return this.onWaiting(event as EventOf<'episode.waiting'>);
      case EventKind.ToolResult:
        return this.onToolResult(event as EventOf<'tool.result'>);
      case EventKind.MessageSent:
        return this.onSent(event as EventOf<'message.sent'>);
      case EventKind.SendFailed:
      case EventKind.SendUnknown:
        return this.onSendProblem(event as EventOf<'send.failed' | 'send.unknown'>);
      case EventKind.SendDropped:
        return this.onSendDropped(event as EventOf<'send.dropped'>);
      case EventKind.MessageRecalled:
        return this.onRecalled(event as EventOf<'message.recalled'>);
      // Not the scheduler's to decide: its own records, other services' facts, the bot's own messages as the
      // implementation reports them (never input), notices and requests (recorded), send verifications (followed
      // by their `message.sent` or a resend).
      case EventKind.MessageObserved:
      case EventKind.MessageDirect:
      case EventKind.DecisionMade:
      case EventKind.EventTransitioned:
      case EventKind.EpisodeStarted:
      case EventKind.EpisodeStep:
      case EventKind.TimerScheduled:
      case EventKind.TimerCancelled:
      case EventKind.PersonalActivityStarted:
      case EventKind.PersonalActivityBeat:
      case EventKind.PersonalActivityCompleted:
      case EventKind.PersonalAgendaLoaded:
      case EventKind.PersonalActivityDetailed:
      case EventKind.PersonalMilestoneReached:
      case EventKind.MemorySummaryWritten:
      case EventKind.MemoryFactLearned:
      case EventKind.MemoryJargonLearned:
      case EventKind.LlmCalled:
      case EventKind.PersonaPublished:
      case EventKind.MonitorRecorded:
      case EventKind.MessageEchoed:
      case EventKind.NoticeReceived:
      case EventKind.RequestReceived:
      case EventKind.SendVerified:
      case EventKind.ThreadUpdated:
      case EventKind.ThreadIdle:
      case EventKind.GroupActorUpdated:
      case EventKind.KeywordLexiconVersioned:
        return this.keywordsChanged();
      case EventKind.KeywordTermChanged:
      case EventKind.KeywordControlRequested:
        return;
    }
  }

  /**
   * A keyword set visible in this group moved on: batches snoozed under an older lexicon are judged again now, at
   * most `KEYWORD_WAKE_BUDGET` per change, each through attention with its budget, cooldown and deadline — so a
   * lexicon update can bring a waiting question forward but never sets off a burst of replies.
   */
  private keywordsChanged(): void {
    const attention = this.ctx.attention;
    if (!attention.keywordVersionFor) return;
    let woken = 0;
    for (const snoozed of Object.values(this.state.snoozed)) {
      if (woken >= KEYWORD_WAKE_BUDGET) return;
      if (snoozed.keywordVersion === undefined) continue;
      if (snoozed.keywordVersion === attention.keywordVersionFor(this.ctx.groupId, snoozed.thread)) continue;
      woken += 1;
      this.emit({ type: 'snoozed', key: snoozed.key, snooze: null });
      this.cancelTimer(snoozed.timerId, 'the keyword lexicon changed: looked at again now');
      const events = this.live(snoozed.eventIds);
      if (events.length > 0) this.judge(events, snoozed.count);
    }
  }

  // --- events and their states -------------------------------------------------------------------------------

  private record(t: TrackedEvent): EventRecord {
    return new EventRecord(t.id, t.state, t.seq, { by: 'scheduler', at: new Date(this.now) });
  }

  /** Move a tracked event to `to` along the allowed path; a no-op when it is there already or has ended. */
  private move(eventId: string, to: EventState, reason: string, decision?: DecisionRecord): void {
    const t = this.state.events[eventId];
    if (!t || t.state === to) return;
    const record = this.record(t).reach(to, reason);
    // Every decision names its thread and the terms that hit it (keyword feedback follows them).
    const full = decision ? { keywordHits: [], ...decision, threadId: decision.threadId ?? t.thread } : undefined;
    this.emit({ type: 'moved', eventId, transitions: record.trail, ...(full ? { decision: full } : {}) });
  }

  private get talk(): TalkSettings {
    return this.ctx.attention.talk?.(this.ctx.groupId) ?? DEFAULT_TALK;
  }

  private track(event: EventEnvelope<MessagePayload>): TrackedEvent {
    const existing = this.state.events[event.id];
    if (existing) return existing;
    const link = this.link(event);
    const t = tracked(event, link.threadId);
    this.emit({ type: 'tracked', event: t });
    const direct = event.payload.directReason ?? (t.direct ? 'direct' : undefined);
    this.move(t.id, 'classified', direct ? `classified: direct (${direct})` : 'classified: ambient');
    this.move(t.id, 'linked', `linked: thread ${t.thread} (${LINK_TEXT[link.link] ?? link.link})`);
    return this.state.events[t.id]!;
  }

  /** Link a message into a thread (opening one, retiring the quietest beyond the cap) and count it for the actor. */
  private link(event: EventEnvelope<MessagePayload>): { threadId: string; link: string } {
    this.emit({ type: 'actor', actor: observeMessage(this.state.actor ?? initialActor(), this.now) });
    if (event.groupId === null) return { threadId: event.threadId ?? MAIN_THREAD, link: 'explicit' };
    const input = linkInputOf(event, this.now);
    const threads = this.settings.threads;
    const { threadId, link } = linkMessage(this.state.threads, input, threads);
    const existing = this.state.threads[threadId];
    if (!existing) {
      const live = liveThreads(this.state.threads, this.now, threads);
      for (const old of live.slice(threads.maxLive - 1)) this.retireThread(old, 'too many live threads');
    }
    const thread = joinThread(existing, threadId, input);
    this.emit({ type: 'thread', thread, link, subjectEventId: event.id });
    if (!existing) this.armIdle(thread);
    return { threadId, link };
  }

  private idleTimerOf(threadId: string): string | undefined {
    const prefix = `thread_idle:${threadId}:`;
    return Object.keys(this.state.timers).find((id) => id.startsWith(prefix));
  }

  private armIdle(thread: ThreadState): void {
    const dueAt = thread.lastAt + this.settings.threads.idleMs;
    this.setTimer({ timerId: `thread_idle:${thread.id}:${dueAt}`, purpose: 'thread_idle', dueAt });
  }

  private retireThread(thread: ThreadState, why: string): void {
    this.cancelTimer(this.idleTimerOf(thread.id), why);
    this.emit({ type: 'threadIdle', thread });
  }

  /** An idle timer came due: the thread idles, or it was active meanwhile and its timer moves on. */
  private threadIdle(timerId: string): void {
    const threadId = timerId.slice('thread_idle:'.length, timerId.lastIndexOf(':'));
    const thread = this.state.threads[threadId];
    if (!thread) return;
    if (thread.lastAt + this.settings.threads.idleMs > this.now) return this.armIdle(thread);
    this.emit({ type: 'threadIdle', thread });
  }

  private live(ids: readonly string[]): TrackedEvent[] {
    return ids.map((id) => this.state.events[id]).filter((t): t is TrackedEvent => t !== undefined);
  }

  // --- timers ------------------------------------------------------------------------------------------------

  private setTimer(timer: TimerSpec): void {
    this.emit({ type: 'timerSet', timer });
  }

  private cancelTimer(timerId: string | undefined, reason: string): void {
    if (timerId === undefined) return;
    const live = this.state.timers[timerId];
    if (live) this.emit({ type: 'timerCancelled', timerId, purpose: live.purpose, reason });
  }

  // --- messages ----------------------------------------------------------------------------------------------

  private onMessage(event: EventEnvelope<MessagePayload>): void {
    if (this.state.events[event.id]) return;
    const notBefore = event.notBefore === undefined ? undefined : Date.parse(event.notBefore);
    if (notBefore !== undefined && notBefore > this.now) {
      const t = this.track(event);
      this.move(t.id, 'scheduled', `scheduled: not before ${event.notBefore}`);
      this.setTimer({
        timerId: `not_before:${t.id}`,
        purpose: 'not_before',
        dueAt: notBefore,
        subjectEventId: t.id,
        ...(t.direct ? { urgent: true } : {}),
      });
      this.watchDeadline(t);
      return;
    }
    this.admit(event, readLateBy(event, this.ctx));
  }

  /**
   * A message whose time has come: interrupt, join or open its sender's batch, or be decided at once. `lateBy`:
   * real ms an ambient message waited in the stream before this turn, when that is past `ambientLateMs` — it has
   * waited longer than a debounce would make it, and the scheduler is behind, so a batch it opens closes at once
   * (one turn, not two); fragments of its sender that are still queued join nothing and are judged on their own,
   * or interrupt the episode this one starts.
   */
  private admit(event: EventEnvelope<MessagePayload>, lateBy?: number): void {
    const t = this.track(event);
    if (t.deadlineAt !== undefined && t.deadlineAt <= this.now) {
      this.move(
        t.id,
        'expired',
        `expired: its deadline ${new Date(t.deadlineAt).toISOString()} passed before it was looked at`,
        {
          outcome: 'expire',
          reason: 'expired: its deadline passed before it was looked at',
          features: {},
        },
      );
      return;
    }
    const thinking = this.unacted(t.senderId, t.thread).find(
      (e) => (e.status === 'offered' || e.status === 'running') && e.interrupts < this.settings.maxInterrupts,
    );
    if (thinking) return this.interrupt(thinking, t);

    const key = batchKey(t.thread, t.senderId);
    const open = this.state.batches[key];
    if (!open && !t.direct && !this.ctx.attention.considersAmbient) {
      this.closeBatch(
        {
          key,
          id: t.id,
          thread: t.thread,
          senderId: t.senderId,
          eventIds: [t.id],
          firstAt: this.now,
          lastAt: this.now,
          timerId: '',
        },
        undefined,
      );
      return;
    }
    const batch: DebounceBatch = open
      ? { ...open, eventIds: [...open.eventIds, t.id], lastAt: this.now }
      : {
          key,
          id: t.id,
          thread: t.thread,
          senderId: t.senderId,
          eventIds: [t.id],
          firstAt: this.now,
          lastAt: this.now,
          timerId: `debounce:${t.id}`,
        };
    if (t.direct && batch.directAt === undefined) batch.directAt = this.now;
    const late = lateBy !== undefined && !open;
    const due = late ? this.now : this.dueOf(batch);
    this.move(
      t.id,
      'scheduled',
      late
        ? `scheduled: read ${(lateBy / 1000).toFixed(1)} s after it was sent (the scheduler is behind) — decided without waiting for more fragments`
        : due <= this.now
          ? 'scheduled: decided without waiting for more fragments'
          : `scheduled: debouncing — waiting until ${new Date(due).toISOString()} for the sender to finish`,
    );
    this.emit({ type: 'batch', key, batch });
    this.watchDeadline(t);
    if (due <= this.now) this.closeBatch(batch, undefined);
    else
      this.setTimer({
        timerId: batch.timerId,
        purpose: 'debounce',
        dueAt: due,
        subjectEventId: batch.id,
        data: { key },
        ...(batch.directAt !== undefined ? { urgent: true } : {}),
      });
  }

  /** When a batch closes: quiet for `quiet`, at most `max` after its start, and soon after a direct fragment. */
  private dueOf(batch: DebounceBatch): number {
    const { debounceQuietMs, debounceMaxMs, debounceDirectMs } = this.settings;
    let due = Math.min(batch.lastAt + debounceQuietMs, batch.firstAt + debounceMaxMs);
    if (batch.directAt !== undefined) due = Math.min(due, batch.directAt + debounceDirectMs);
    return due;
  }

  private watchDeadline(t: TrackedEvent): void {
    const timerId = `deadline:${t.id}`;
    if (t.deadlineAt === undefined || this.state.timers[timerId]) return;
    this.setTimer({ timerId, purpose: 'deadline', dueAt: t.deadlineAt, subjectEventId: t.id });
  }

  private closeBatch(batch: DebounceBatch, firing: string | undefined): void {
    if (this.state.batches[batch.key]) this.emit({ type: 'batch', key: batch.key, batch: null });
    if (batch.timerId !== firing) this.cancelTimer(batch.timerId, 'the batch was decided');
    const events = this.live(batch.eventIds);
    if (events.length === 0) return;
    this.judge(events, 0);
  }

  /** `because`: why the batch is judged again (added to the verdict's reason). */
  private judge(events: TrackedEvent[], snoozes: number, because?: string): void {
    const trigger = events[events.length - 1]!;
    const fragments = events.flatMap((t) => {
      const envelope = this.ctx.messages.get(t.id);
      return envelope ? [{ eventId: t.id, message: envelope.payload }] : [];
    });
    const direct = fragments.find((f) => f.message.directReason !== undefined)?.message.directReason;
    const verdict = this.ctx.attention.judge({
      groupId: this.ctx.groupId,
      thread: trigger.thread,
      senderId: trigger.senderId,
      fragments,
      direct: direct ?? (events.some((t) => t.direct) ? 'at' : undefined),
      snoozes,
      group: this.state,
      now: this.now,
    });
    this.apply(events, because ? { ...verdict, reason: `${verdict.reason} (${because})` } : verdict, snoozes);
  }

  private apply(events: TrackedEvent[], verdict: AttentionVerdict, snoozes: number): void {
    const trigger = events[events.length - 1]!;
    if (verdict.outcome === 'snooze' && snoozes >= this.settings.maxSnoozes) {
      verdict = {
        ...verdict,
        outcome: 'skip',
        reason: `skipped: snoozed ${snoozes} times already (${verdict.reason})`,
      };
    }
    switch (verdict.outcome) {
      case 'skip':
        for (const t of events) {
          this.cancelTimer(`deadline:${t.id}`, 'the event was decided');
          this.move(t.id, 'skipped', verdict.reason, {
            outcome: 'skip',
            reason: verdict.reason,
            features: verdict.features,
            ...hitsOf(verdict),
          });
        }
        return;
      case 'snooze': {
        const count = snoozes + 1;
        const timerId = `snooze:${trigger.id}:${count}`;
        const until = verdict.snoozeUntil ?? this.now + this.settings.debounceQuietMs;
        for (const t of events) {
          this.move(t.id, 'snoozed', verdict.reason, {
            outcome: 'snooze',
            reason: verdict.reason,
            features: verdict.features,
            ...hitsOf(verdict),
          });
        }
        this.emit({
          type: 'snoozed',
          key: trigger.id,
          snooze: {
            key: trigger.id,
            thread: trigger.thread,
            senderId: trigger.senderId,
            eventIds: events.map((t) => t.id),
            count,
            timerId,
            ...(verdict.keywordVersion !== undefined ? { keywordVersion: verdict.keywordVersion } : {}),
          },
        });
        this.setTimer({ timerId, purpose: 'snooze', dueAt: until, subjectEventId: trigger.id });
        return;
      }
      case 'deliberate':
        this.dispatch(events, verdict.reason, verdict.features, 1, verdict.keywordHits);
        return;
    }
  }

  // --- episodes ----------------------------------------------------------------------------------------------

  /** Unfinished episodes of one sender in one thread that have not acted yet, oldest first. */
  private unacted(senderId: string, thread: string): EpisodeEntry[] {
    return Object.values(this.state.episodes).filter(
      (e) => e.senderId === senderId && e.thread === thread && !e.acted && e.status !== 'replied',
    );
  }

  private dispatch(
    events: TrackedEvent[],
    reason: string,
    features: Record<string, number>,
    attempt: number,
    keywordHits: DecisionKeywordHit[] = [],
  ): void {
    const trigger = events[events.length - 1]!;
    const lane = events.some((t) => t.direct) ? 'direct' : 'ambient';
    // An event decided again gets an episode id of its own (the one that replied without covering it may be its).
    const again = trigger.redecided ? `-again${trigger.redecided}` : '';
    const episodeId = `${episodeIdFor(trigger.id)}${again}${attempt === 1 ? '' : `-a${attempt}`}`;
    let subjects = events.map((t) => t.id);
    const inherited: { episodeId: string; eventIds: string[] }[] = [];

    for (const earlier of this.unacted(trigger.senderId, trigger.thread)) {
      this.stop(earlier, 'supersede', `superseded: ${trigger.senderId} went on; ${episodeId} answers all of it`, {
        supersededBy: episodeId,
      });
      const taken = earlier.subjects.filter((id) => !subjects.includes(id));
      if (taken.length > 0) inherited.push({ episodeId: earlier.id, eventIds: taken.slice(-256) });
      subjects = [...taken, ...subjects];
    }
    if (lane === 'direct') {
      for (const ambient of Object.values(this.state.episodes)) {
        if (ambient.lane !== 'ambient' || ambient.acted || ambient.status === 'replied') continue;
        this.stop(
          ambient,
          'supersede',
          `superseded: a message addressed to the bot (${trigger.id}) takes the group's turn`,
          {
            supersededBy: episodeId,
            subjectsTo: 'skipped',
          },
        );
      }
    }

    const live = this.live(subjects);
    const ownDeadlines = live.flatMap((t) => (t.deadlineAt === undefined ? [] : [t.deadlineAt]));
    const deadlineAt = Math.min(this.now + this.settings.eventDeadlineMs, ...ownDeadlines);
    const decision = { outcome: 'deliberate' as const, reason, features, episodeId, keywordHits };
    for (const t of live) {
      this.cancelTimer(`deadline:${t.id}`, 'the event went to an episode');
      if (t.state === 'deliberating' || t.state === 'eligible') continue;
      this.move(t.id, 'eligible', t.id === trigger.id ? reason : `${reason} — fragment of ${trigger.id}`, decision);
    }
    const deadlineTimerId = `deadline:${episodeId}`;
    const episode: EpisodeEntry = {
      id: episodeId,
      jobId: episodeJobId(episodeId),
      lane,
      priority: lane === 'direct' ? 0 : trigger.priority,
      senderId: trigger.senderId,
      thread: trigger.thread,
      triggerEventId: trigger.id,
      subjects: live.map((t) => t.id),
      fragmentIds: live.map((t) => t.id).filter((id) => id !== trigger.id),
      status: 'offered',
      seq: 1,
      acted: false,
      interrupts: 0,
      takenIn: [],
      deadlineAt,
      deadlineTimerId,
      attempt,
    };
    this.emit({
      type: 'episodeOffered',
      episode,
      job: {
        episodeId,
        jobId: episode.jobId,
        mode: 'start',
        lane,
        priority: episode.priority,
        groupId: this.ctx.groupId,
        triggerEventId: trigger.id,
        fragmentIds: episode.fragmentIds.slice(-32),
        thread: trigger.thread,
        deadline: deadlineAt,
        controlSeq: 1,
        ...(inherited.length > 0 ? { inherited: inherited.slice(-16) } : {}),
      },
    });
    this.setTimer({ timerId: deadlineTimerId, purpose: 'deadline', dueAt: deadlineAt, episodeId });
    if (lane === 'ambient' && attempt === 1) {
      const actor = this.state.actor ?? initialActor();
      this.emit({
        type: 'actor',
        actor: { ...actor, version: actor.version + 1 },
        reason: `ambient episode ${episodeId} takes a share of the reply budget`,
      });
    }
  }

  private control(episode: EpisodeEntry, fields: Omit<EpisodeControlPayload, 'episodeId' | 'seq'>): number {
    const seq = episode.seq + 1;
    // The contract caps the list; the newest events matter most.
    const eventIds = fields.eventIds?.slice(-256);
    this.emit({
      type: 'control',
      control: { episodeId: episode.id, seq, ...fields, ...(eventIds ? { eventIds } : {}) },
    });
    return seq;
  }

  private interrupt(episode: EpisodeEntry, t: TrackedEvent): void {
    const n = episode.interrupts + 1;
    const reason = `deliberate: merged into ${episode.id} — the sender went on (interrupt ${n})`;
    this.move(t.id, episode.status === 'running' ? 'deliberating' : 'eligible', reason, {
      outcome: 'deliberate',
      reason,
      features: { interrupt: n },
      episodeId: episode.id,
    });
    const takenIn = [...episode.takenIn, t.id];
    const seq = this.control(episode, {
      command: 'interrupt',
      reason: `interrupt: ${t.senderId} sent another message (${t.id})`,
      eventIds: takenIn,
    });
    this.emit({
      type: 'episodeUpdated',
      episode: {
        ...this.state.episodes[episode.id]!,
        seq,
        interrupts: n,
        takenIn,
        subjects: [...episode.subjects, t.id],
      },
    });
  }

  /**
   * Stop an episode for good (supersede or cancel): command, take its job out of the dispatcher, drop its timers.
   * Its events go to `subjectsTo` when given; without, they are carried by whoever takes over.
   */
  private stop(
    episode: EpisodeEntry,
    command: 'supersede' | 'cancel',
    reason: string,
    options: { supersededBy?: string; subjectsTo?: EventState; subjectReason?: (id: string) => string } = {},
  ): void {
    this.control(episode, {
      command,
      reason,
      eventIds: episode.subjects,
      ...(options.supersededBy ? { supersededBy: options.supersededBy } : {}),
    });
    this.emit({ type: 'withdrawn', jobId: episode.jobId });
    this.end(episode, options.subjectsTo, options.subjectReason ?? (() => reason));
  }

  private end(episode: EpisodeEntry, subjectsTo: EventState | undefined, reason: (id: string) => string): void {
    this.cancelTimer(episode.deadlineTimerId, 'the episode ended');
    this.cancelTimer(episode.waitTimerId, 'the episode ended');
    this.cancelTimer(`retry:${episode.id}`, 'the episode ended');
    if (subjectsTo) {
      for (const t of this.live(episode.subjects)) {
        const why = reason(t.id);
        const outcome = subjectsTo === 'expired' ? 'expire' : subjectsTo === 'skipped' ? 'skip' : undefined;
        this.move(
          t.id,
          subjectsTo,
          why,
          outcome ? { outcome, reason: why, features: {}, episodeId: episode.id } : undefined,
        );
      }
    }
    this.emit({ type: 'episodeEnded', episodeId: episode.id });
  }

  private resume(
    episode: EpisodeEntry,
    cause: ResumeCause,
    wake: { eventId: string; timerId?: string; toolCallId?: string },
  ): void {
    if (this.now >= episode.deadlineAt) {
      this.stop(episode, 'cancel', "cancelled: the episode's deadline passed while it waited", {
        subjectsTo: 'expired',
        subjectReason: () => 'expired: no answer before the deadline (the episode was waiting)',
      });
      return;
    }
    this.cancelTimer(episode.waitTimerId, 'the episode resumed');
    const seq = this.control(episode, {
      command: 'resume',
      reason:
        cause === 'tool_result' ? `resume: tool result ${wake.toolCallId ?? ''}`.trim() : 'resume: its wait is over',
      cause,
      ...(wake.timerId ? { timerId: wake.timerId } : {}),
      ...(wake.toolCallId ? { toolCallId: wake.toolCallId } : {}),
    });
    const next: EpisodeEntry = {
      ...this.state.episodes[episode.id]!,
      seq,
      status: 'offered',
      jobId: episodeJobId(episode.id, 'resume', seq),
    };
    delete next.waitTimerId;
    delete next.toolCallId;
    this.emit({
      type: 'episodeOffered',
      episode: next,
      job: {
        episodeId: episode.id,
        jobId: next.jobId,
        mode: 'resume',
        lane: episode.lane,
        priority: episode.priority,
        groupId: this.ctx.groupId,
        triggerEventId: episode.triggerEventId,
        fragmentIds: episode.fragmentIds.slice(-32),
        deadline: episode.deadlineAt,
        controlSeq: seq,
        resume: {
          cause,
          eventId: wake.eventId,
          ...(wake.timerId ? { timerId: wake.timerId } : {}),
          ...(wake.toolCallId ? { toolCallId: wake.toolCallId } : {}),
        },
      },
    });
  }

  // --- timers firing -----------------------------------------------------------------------------------------

  private onTimer(event: EventOf<'timer.fired'>): void {
    const p = event.payload;
    if (!this.state.timers[p.timerId]) return;
    this.emit({ type: 'timerFired', timerId: p.timerId });
    const purpose: TimerPurpose = p.purpose;
    switch (purpose) {
      case 'debounce': {
        const batch = Object.values(this.state.batches).find((b) => b.timerId === p.timerId);
        if (batch) this.closeBatch(batch, p.timerId);
        return;
      }
      case 'not_before': {
        const t = p.subjectEventId === undefined ? undefined : this.state.events[p.subjectEventId];
        const envelope = t ? this.ctx.messages.get(t.id) : undefined;
        if (t && envelope) this.admit(envelope);
        return;
      }
      case 'snooze': {
        const snoozed = Object.values(this.state.snoozed).find((s) => s.timerId === p.timerId);
        if (!snoozed) return;
        this.emit({ type: 'snoozed', key: snoozed.key, snooze: null });
        const events = this.live(snoozed.eventIds);
        if (events.length > 0) this.judge(events, snoozed.count);
        return;
      }
      case 'deadline':
        return p.episodeId !== undefined ? this.episodeDeadline(p.episodeId) : this.eventDeadline(p.subjectEventId);
      case 'retry': {
        const episode = p.episodeId === undefined ? undefined : this.state.episodes[p.episodeId];
        if (episode?.status !== 'retrying') return;
        this.end(episode, undefined, () => '');
        const events = this.live(episode.subjects);
        if (events.length > 0)
          this.dispatch(events, `deliberate: attempt ${episode.attempt + 1} after a failure`, {}, episode.attempt + 1);
        return;
      }
      case 'episode_wait':
      case 'tool_timeout': {
        const episode = p.episodeId === undefined ? undefined : this.state.episodes[p.episodeId];
        if (episode?.status !== 'waiting' || episode.waitTimerId !== p.timerId) return;
        this.resume(episode, 'timer', { eventId: event.id, timerId: p.timerId });
        return;
      }
      case 'thread_idle':
        return this.threadIdle(p.timerId);
      case 'cooldown':
        return;
    }
  }

  private episodeDeadline(episodeId: string): void {
    const episode = this.state.episodes[episodeId];
    if (!episode) return;
    if (episode.status === 'replied') {
      this.end(episode, 'expired', () => 'expired: the reply was not confirmed delivered before the deadline');
      return;
    }
    if (episode.delivered) {
      this.end(episode, 'expired', () => `expired: ${episode.id} replied but did not get to it before the deadline`);
      return;
    }
    if (episode.acted) return;
    this.stop(episode, 'cancel', 'cancelled: the deadline passed before it answered', {
      subjectsTo: 'expired',
      subjectReason: () => `expired: no answer before the deadline ${new Date(episode.deadlineAt).toISOString()}`,
    });
  }

  private eventDeadline(eventId: string | undefined): void {
    const t = eventId === undefined ? undefined : this.state.events[eventId];
    if (!t) return;
    if (Object.values(this.state.episodes).some((e) => e.subjects.includes(t.id))) return;
    this.forgetPending(t.id, 'the event expired');
    this.move(t.id, 'expired', 'expired: its deadline passed while it waited to be decided', {
      outcome: 'expire',
      reason: 'expired: its deadline passed while it waited to be decided',
      features: {},
    });
  }

  /** Take an event out of its batch or snooze (and their timers), before it ends on its own. */
  private forgetPending(eventId: string, why: string): void {
    for (const batch of Object.values(this.state.batches)) {
      if (!batch.eventIds.includes(eventId)) continue;
      const rest = batch.eventIds.filter((id) => id !== eventId);
      if (rest.length === 0) {
        this.emit({ type: 'batch', key: batch.key, batch: null });
        this.cancelTimer(batch.timerId, why);
      } else {
        this.emit({ type: 'batch', key: batch.key, batch: { ...batch, eventIds: rest } });
      }
    }
    for (const snoozed of Object.values(this.state.snoozed)) {
      if (!snoozed.eventIds.includes(eventId)) continue;
      const rest = snoozed.eventIds.filter((id) => id !== eventId);
      if (rest.length === 0) {
        this.emit({ type: 'snoozed', key: snoozed.key, snooze: null });
        this.cancelTimer(snoozed.timerId, why);
      } else {
        this.emit({ type: 'snoozed', key: snoozed.key, snooze: { ...snoozed, eventIds: rest } });
      }
    }
    this.cancelTimer(`not_before:${eventId}`, why);
    this.cancelTimer(`deadline:${eventId}`, why);
  }

  // --- what the episode, the sends and the people report back ------------------------------------------------

  private onControl(event: EventOf<'episode.control'>): void {
    const p = event.payload;
    if (p.command !== 'start') return;
    const episode = this.state.episodes[p.episodeId];
    if (!episode) {
      if (this.state.ended.includes(p.episodeId)) return;
      // Dispatched, but this group never recorded the decision (it was dead-lettered): it must not act.
      this.emit({
        type: 'control',
        control: {
          episodeId: p.episodeId,
          command: 'cancel',
          seq: p.seq + 1,
          reason: 'cancelled: the scheduler holds no decision for this episode',
        },
      });
      this.emit({ type: 'withdrawn', jobId: episodeJobId(p.episodeId) });
      this.emit({ type: 'episodeEnded', episodeId: p.episodeId });
      return;
    }
    if (episode.status !== 'offered') return;
    this.emit({ type: 'episodeUpdated', episode: { ...episode, status: 'running' } });
    for (const t of this.live(episode.subjects)) {
      if (t.state === 'eligible') this.move(t.id, 'deliberating', `deliberating: ${episode.id} started`);
    }
  }

  /** The episode acted: never preempted after that; what its replies cover so far is kept for their delivery. */
  private onAction(event: EventOf<'action.send'>): void {
    const episode = this.state.episodes[event.payload.episodeId];
    if (!episode) return;
    // Once it completed, what its replies covered is final (the completion decided the rest again).
    const named = episode.status === 'replied' ? undefined : event.payload.answeredEventIds;
    const covered = named === undefined ? episode.covered : union(episode.covered ?? [], named);
    if (episode.acted && covered?.length === episode.covered?.length) return;
    this.emit({
      type: 'episodeUpdated',
      episode: { ...episode, acted: true, ...(covered !== undefined ? { covered } : {}) },
    });
  }

  private onCompleted(event: EventOf<'episode.completed'>): void {
    const p = event.payload;
    const episode = this.state.episodes[p.episodeId];
    this.emit({ type: 'released', jobId: episode?.jobId ?? episodeJobId(p.episodeId) });
    if (!episode) return;
    switch (p.outcome) {
      case 'replied':
        return this.completedReplied(episode, p.answeredEventIds);
      case 'no_reply':
        return this.end(episode, 'skipped', () => 'skipped: the episode chose not to reply');
      case 'cancelled':
        return this.end(
          episode,
          'skipped',
          () => `skipped: the episode was cancelled (${p.error?.message ?? 'no reason'})`,
        );
      case 'superseded':
        return this.end(episode, undefined, () => '');
      case 'failed': {
        const code = p.error?.code ?? 'UNKNOWN';
        const retryAt = this.now + this.settings.retryDelayMs;
        if (
          RETRYABLE_CODES.has(code) &&
          episode.attempt <= this.settings.episodeRetries &&
          retryAt < episode.deadlineAt
        ) {
          this.emit({ type: 'episodeUpdated', episode: { ...episode, status: 'retrying' } });
          for (const t of this.live(episode.subjects)) {
            this.move(
              t.id,
              'snoozed',
              `snoozed: episode failed (${code}); retry after ${new Date(retryAt).toISOString()}`,
            );
          }
          this.setTimer({
            timerId: `retry:${episode.id}`,
            purpose: 'retry',
            dueAt: retryAt,
            episodeId: episode.id,
            ...(episode.lane === 'direct' ? { urgent: true } : {}),
          });
          return;
        }
        const why = `skipped: episode failed (${code}: ${p.error?.message ?? ''})`.trim();
        return this.end(episode, 'skipped', () => why);
      }
    }
  }

  private onWaiting(event: EventOf<'episode.waiting'>): void {
    const p = event.payload;
    const episode = this.state.episodes[p.episodeId];
    if (!episode || (episode.status !== 'running' && episode.status !== 'offered')) return;
    this.emit({ type: 'released', jobId: episode.jobId });
    const timerId =
      p.cause === 'wait'
        ? `episode_wait:${episode.id}:${p.step}`
        : `tool_timeout:${episode.id}:${p.toolCallId ?? p.step}`;
    const due =
      p.cause === 'wait'
        ? Date.parse(p.resumeAt ?? new Date(this.now).toISOString())
        : Date.parse(p.timeoutAt ?? new Date(episode.deadlineAt).toISOString());
    const next: EpisodeEntry = { ...episode, status: 'waiting', waitTimerId: timerId };
    if (p.toolCallId !== undefined) next.toolCallId = p.toolCallId;
    this.emit({ type: 'episodeUpdated', episode: next });
    this.setTimer({
      timerId,
      purpose: p.cause === 'wait' ? 'episode_wait' : 'tool_timeout',
      dueAt: Math.min(due, episode.deadlineAt),
      episodeId: episode.id,
      ...(episode.lane === 'direct' ? { urgent: true } : {}),
    });
  }

  private onToolResult(event: EventOf<'tool.result'>): void {
    const p = event.payload;
    const episode = this.state.episodes[p.episodeId];
    if (episode?.status !== 'waiting' || episode.toolCallId !== p.toolCallId) return;
    this.resume(episode, 'tool_result', { eventId: event.id, toolCallId: p.toolCallId });
  }

  /**
   * The episode ended replying: what its replies covered is final. The rest is decided again now; the covered
   * events end `replied` once a reply is delivered — already, when one was delivered while it still ran (then it
   * ends here, unless the reply of this completion's commit is still on its way).
   */
  private completedReplied(episode: EpisodeEntry, named: string[] | undefined): void {
    if (episode.status === 'replied') return;
    const next: EpisodeEntry = { ...episode, status: 'replied', acted: true };
    // Not named (an older cognition): its replies cover every subject, as before.
    if (named === undefined) delete next.covered;
    else next.covered = union(episode.covered ?? [], named);
    this.emit({ type: 'episodeUpdated', episode: next });
    if (next.covered !== undefined) this.redecide(next);
    const after = this.state.episodes[episode.id]!;
    if (after.delivered && (after.covered === undefined || this.live(after.subjects).length === 0)) {
      this.end(after, 'replied', () => 'replied: the reply was delivered');
    }
  }

  /**
   * The events of a replied episode its replies did not cover leave it and are decided again, as a batch of their
   * sender: an @ among them gets an episode of its own. Each only `MAX_REDECISIONS` times; past that, it counts as
   * replied (its sender was answered, twice, without it).
   */
  private redecide(episode: EpisodeEntry): void {
    const covered = new Set(episode.covered ?? []);
    const uncovered = this.live(episode.subjects).filter((t) => !covered.has(t.id));
    if (uncovered.length === 0) return;
    const leaving = new Set(uncovered.map((t) => t.id));
    this.emit({
      type: 'episodeUpdated',
      episode: { ...episode, subjects: episode.subjects.filter((id) => !leaving.has(id)) },
    });
    const why = `${episode.id} replied without covering it`;
    const again: string[] = [];
    for (const t of uncovered) {
      if ((t.redecided ?? 0) >= MAX_REDECISIONS) {
        this.move(t.id, 'replied', `replied: ${why}, and it was decided again already`);
        continue;
      }
      this.emit({ type: 'redecided', eventId: t.id });
      this.move(t.id, 'scheduled', `redecided: ${why}`);
      again.push(t.id);
    }
    const events = this.live(again);
    if (events.length > 0) this.judge(events, 0, `decided again: ${why}`);
  }

  private onSent(event: EventOf<'message.sent'>): void {
    const episode = this.state.episodes[event.payload.episodeId];
    if (!episode) return;
    this.delivered(episode, event.payload.text, event.payload.onebotMessageId, 'replied: the reply was delivered');
  }

  /**
   * A reply of the episode reached the group (or may have). The events its replies cover end `replied`; the
   * episode ends with them once it has completed. Before that it stays: it replies on, and what it did not cover
   * is decided again when it completes. Without a covered list (entries from before it) it ends at once, every
   * subject replied.
   */
  private delivered(episode: EpisodeEntry, text: string, messageId: string | undefined, reason: string): void {
    if (!episode.delivered) this.replied(episode, text, messageId);
    if (episode.covered === undefined) return this.end(episode, 'replied', () => reason);
    const covered = new Set(episode.covered);
    for (const t of this.live(episode.subjects)) {
      if (covered.has(t.id)) this.move(t.id, 'replied', reason);
    }
    const now = this.state.episodes[episode.id]!;
    if (now.status === 'replied') return this.end(now, undefined, () => '');
    if (!now.delivered) this.emit({ type: 'episodeUpdated', episode: { ...now, delivered: true } });
  }

  /** The bot's reply counts for the group actor and joins the thread it answers. */
  private replied(episode: EpisodeEntry, text: string, messageId: string | undefined): void {
    const actor = recordReply(
      this.state.actor ?? initialActor(),
      { at: this.now, partnerId: episode.senderId, threadId: episode.thread },
      this.talk,
    );
    this.emit({ type: 'actor', actor, reason: `replied to ${episode.senderId} in ${episode.thread}` });
    const thread = this.state.threads[episode.thread];
    if (!thread) return;
    const reply: { at: number; partnerId: string; text: string; messageId?: string } = {
      at: this.now,
      partnerId: episode.senderId,
      text,
    };
    if (messageId !== undefined) reply.messageId = messageId;
    this.emit({ type: 'thread', thread: botReplied(thread, reply), link: 'bot' });
  }

  private onSendProblem(event: EventOf<'send.failed' | 'send.unknown'>): void {
    const p = event.payload;
    const episode = this.state.episodes[p.episodeId];
    if (!episode) return;
    if (event.kind === EventKind.SendFailed) {
      this.end(episode, 'skipped', () => `skipped: the reply could not be delivered (${p.error.code})`);
    } else {
      this.delivered(episode, p.text, undefined, `replied: delivery unconfirmed (${p.error.code})`);
    }
  }

  /** Outbound let the reply go before it went out: its trigger was recalled. */
  private onSendDropped(event: EventOf<'send.dropped'>): void {
    const episode = this.state.episodes[event.payload.episodeId];
    if (!episode) return;
    this.end(episode, 'skipped', () => `skipped: the reply was dropped before it went out (${event.payload.reason})`);
  }

  private onRecalled(event: EventOf<'message.recalled'>): void {
    const p = event.payload;
    const t = Object.values(this.state.events).find((e) => e.messageId === p.messageId && e.senderId === p.userId);
    if (!t) return;
    const recalled = `skipped: the message was recalled${p.operatorId !== p.userId ? ' by an admin' : ''}`;
    const episode = Object.values(this.state.episodes).find((e) => e.subjects.includes(t.id));
    if (episode) {
      if (episode.acted || episode.status === 'replied') return;
      this.stop(episode, 'cancel', `cancelled: ${t.id} it answers was recalled`, {
        subjectsTo: 'skipped',
        subjectReason: (id) =>
          id === t.id ? recalled : `skipped: its episode was cancelled because ${t.id} was recalled`,
      });
      return;
    }
    this.forgetPending(t.id, 'the message was recalled');
    this.move(t.id, 'skipped', recalled, { outcome: 'skip', reason: recalled, features: { recalled: 1 } });
  }
}
