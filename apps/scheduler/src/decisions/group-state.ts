import type {
  ThreadUpdatedPayload,
  TimerScheduledPayload,
  DecisionKeywordHit,
  DecisionOutcome,
  DispatchLane,
  EpisodeControlPayload,
  EpisodeResumeInfo,
  EventState,
  StateTransition,
  TimerPurpose,
} from '@app/contracts';
import { initialActor, type GroupActorState } from '../actors/group-actor.js';
import type { ThreadSettings, ThreadState } from '../threads/thread-linking.js';

/*
 * The scheduler's state of one group (its part of the GroupActor): the events it still tracks, the senders'
 * debounce batches, snoozed batches, the group's unfinished episodes and its live durable timers. Terminal events
 * leave it; their history is in the log and the `events` read model. Everything here is plain data (JSON in Redis,
 * `Keyspace.groupState`), folded by `evolve` from the effects `decide` returns.
 */

/** The thread of events with no group (nothing to link them with). */
export const MAIN_THREAD = 'main';

export interface TrackedEvent {
  id: string;
  /** OneBot message id (for recalls). */
  messageId: string;
  senderId: string;
  thread: string;
  direct: boolean;
  priority: number;
  state: EventState;
  /** Transitions recorded so far. */
  seq: number;
  /** The event's own deadline (product ms), when it carries one. */
  deadlineAt?: number;
  /** How often it was decided again because the episode that had it replied without covering it. */
  redecided?: number;
}

/** One sender's fragments in one thread, waiting for the sender to be quiet (Maisaka debounce). */
export interface DebounceBatch {
  /** `thread␀sender`. */
  key: string;
  /** The first fragment's event id; names the batch's timer. */
  id: string;
  thread: string;
  senderId: string;
  /** Oldest first. */
  eventIds: string[];
  firstAt: number;
  lastAt: number;
  /** When the first fragment addressed to the bot arrived. */
  directAt?: number;
  timerId: string;
}

/** A batch attention asked to look at again later. */
export interface SnoozedBatch {
  /** The newest fragment's event id. */
  key: string;
  thread: string;
  senderId: string;
  eventIds: string[];
  count: number;
  timerId: string;
  /** The keyword lexicon version attention judged it with (`KeywordLookup.versionFor`). */
  keywordVersion?: string;
}

export type EpisodeStatus = 'offered' | 'running' | 'waiting' | 'replied' | 'retrying';

export interface EpisodeEntry {
  id: string;
  /** The BullMQ job of its current run (start or continuation). */
  jobId: string;
  lane: DispatchLane;
  priority: number;
  senderId: string;
  thread: string;
  triggerEventId: string;
  /** Every event this episode answers (trigger, fragments, messages taken in, superseded episodes' events). */
  subjects: string[];
  /** Fragments of the trigger's sender (oldest first), as handed to the job. */
  fragmentIds: string[];
  status: EpisodeStatus;
  /** Highest control seq sent (`start` is 1). */
  seq: number;
  /** It appended an action (a reply is on its way): never preempted after that. */
  acted: boolean;
  interrupts: number;
  /** Message events taken in by interrupts (cumulative). */
  takenIn: string[];
  deadlineAt: number;
  deadlineTimerId: string;
  waitTimerId?: string;
  toolCallId?: string;
  attempt: number;
  /**
   * The subjects its replies covered, as its `action.send`s and its completion name them (`answeredEventIds`).
   * Absent while none named any — entries from before the field: then its replies cover every subject.
   */
  covered?: string[];
  /** A reply of it was delivered while it still ran (it replies on): it ends when it completes. */
  delivered?: boolean;
}

export interface LiveTimer {
  purpose: TimerPurpose;
  dueAt: number;
}

export interface GroupState {
  events: Record<string, TrackedEvent>;
  batches: Record<string, DebounceBatch>;
  snoozed: Record<string, SnoozedBatch>;
  episodes: Record<string, EpisodeEntry>;
  timers: Record<string, LiveTimer>;
  /** Episodes that ended lately (newest last), so a late `start` of one is recognised and ignored. */
  ended: string[];
  /** Live threads by id (`threads/`). */
  threads: Record<string, ThreadState>;
  /** The group actor: the bot's own part in the group (`actors/`). */
  actor: GroupActorState;
  /**
   * Records of turns not yet published, oldest first (ADR 0033): a message's moves into its debounce wait and that
   * turn's facts, written by the adapter (`GroupRuntime`), never by `decide`. Absent or empty: none.
   */
  unpublished?: UnpublishedTurn[];
}

/**
 * A message turn whose only news was that the message now waits for its sender's debounce (ADR 0033): what its
 * `event.transitioned` would have said, kept in the group state until the group's next turn that publishes, which
 * publishes it first (in the message's own `decision.made` when that is the turn's carrier).
 */
export interface UnpublishedTurn {
  subjectEventId: string;
  /** The handled message's correlation id, actor ids and priority, for a record published on its own. */
  correlationId: string;
  actorIds: string[];
  priority: number;
  /** Product ms of the turn. */
  at: number;
  transitions: StateTransition[];
  /** The turn's thread snapshots and timers set (each with `setAt`); a turn with other facts is not deferred. */
  threads: ThreadUpdatedPayload[];
  timersScheduled: TimerScheduledPayload[];
}

/** How many ended episode ids a group remembers. */
export const ENDED_KEPT = 64;

export function initialState(): GroupState {
  return {
    events: {},
    batches: {},
    snoozed: {},
    episodes: {},
    timers: {},
    ended: [],
    threads: {},
    actor: initialActor(),
  };
}

export interface TimerSpec {
  timerId: string;
  purpose: TimerPurpose;
  dueAt: number;
  subjectEventId?: string;
  episodeId?: string;
  data?: Record<string, unknown>;
  /**
   * Someone addressed the bot and waits on this timer (a debounce batch holding such a message, its not-before, the
   * retry or resume of a direct episode): it fires at direct priority, so its turn goes ahead of ambient work as
   * the @ itself did (ADR 0037).
   */
  urgent?: boolean;
}

/** What the dispatcher needs to queue one run of an episode; the adapter builds the `EpisodeJob` from it. */
export interface JobSpec {
  episodeId: string;
  jobId: string;
  mode: 'start' | 'resume';
  lane: DispatchLane;
  priority: number;
  groupId: string | null;
  triggerEventId: string;
  fragmentIds: string[];
  /** The thread the episode answers in. */
  thread?: string;
  /** Product time the run must give up. */
  deadline: number;
  controlSeq: number;
  resume?: EpisodeResumeInfo;
  /** Fragments taken over from superseded episodes (see `EpisodeJob.inherited`). */
  inherited?: { episodeId: string; eventIds: string[] }[];
}

export interface DecisionRecord {
  outcome: DecisionOutcome;
  reason: string;
  features: Record<string, number>;
  episodeId?: string;
  threadId?: string;
  keywordHits?: DecisionKeywordHit[];
}

/** The facts `decide` returns; `evolve` folds them into the state and the adapter turns them into effects. */
export type SchedulerEffect =
  | { type: 'tracked'; event: TrackedEvent }
  /** The event is decided again: its episode replied without covering it (counted, to do so only once). */
  | { type: 'redecided'; eventId: string }
  | { type: 'moved'; eventId: string; transitions: StateTransition[]; decision?: DecisionRecord }
  | { type: 'batch'; key: string; batch: DebounceBatch | null }
  | { type: 'snoozed'; key: string; snooze: SnoozedBatch | null }
  | { type: 'timerSet'; timer: TimerSpec }
  | { type: 'timerCancelled'; timerId: string; purpose: TimerPurpose; reason: string }
  | { type: 'timerFired'; timerId: string }
  | { type: 'episodeOffered'; episode: EpisodeEntry; job: JobSpec }
  | { type: 'episodeUpdated'; episode: EpisodeEntry }
  | { type: 'episodeEnded'; episodeId: string }
  | { type: 'control'; control: EpisodeControlPayload }
  /** Take the job out of the dispatcher: remove it if still waiting, free its slot if it runs. */
  | { type: 'withdrawn'; jobId: string }
  /** The job's run ended (completed or parked): free its slot. */
  | { type: 'released'; jobId: string }
  /** A thread changed (`link` says why); `thread.updated`. */
  | { type: 'thread'; thread: ThreadState; link: string; subjectEventId?: string }
  /** A thread went idle and left the live threads; `thread.idle`. */
  | { type: 'threadIdle'; thread: ThreadState }
  /** The group actor changed; `publish` when it is a fact worth the log (a reply, an episode). */
  | { type: 'actor'; actor: GroupActorState; reason?: string };

export interface SchedulerSettings {
  debounceQuietMs: number;
  debounceMaxMs: number;
  debounceDirectMs: number;
  /**
   * Real ms after which an ambient message the scheduler reads only now is decided in its own turn instead of
   * waiting out a debounce: the scheduler is behind, and the wait has already passed in its stream (0: never).
   */
  ambientLateMs: number;
  eventDeadlineMs: number;
  episodeTimeoutMs: number;
  maxInterrupts: number;
  episodeRetries: number;
  retryDelayMs: number;
  maxSnoozes: number;
  /** Thread linking gaps (`threads/`). */
  threads: ThreadSettings;
}
