import {
  EventKind,
  type EventEnvelope,
  type EventOf,
  type EventState,
  type MessageSegment,
  type StateTransition,
  unfoldTurn,
} from '@app/contracts';
import { foldAttentionEvent, type AttentionPatches } from './attention-projection.rules.js';
import type { GroupActorRow, ThreadRow } from './attention.rows.js';
import { foldLifeEvent, type LifePatches } from './life-projection.rules.js';
import type { ActivityRow, AgendaMilestoneRow, AgendaRow, BeatRow } from './life.rows.js';
import { foldMemoryEvent, foldMessageMemory, foldSentMemory, type MemoryPatches } from './memory-projection.rules.js';
import type { FactRow, JargonRow, MemoryMessageRow, SummaryRow } from './memory.rows.js';
import { foldDecisionHits, foldKeywordEvent, type KeywordPatches } from './keyword-projection.rules.js';
import type { KeywordHitRow, KeywordSetRow, KeywordTermRow } from './keyword.rows.js';

/*
 * The projection as a pure fold: archived events in, read-model rows out. The writer turns the rows into one
 * upsert per table; the SQL merge and `mergeRow` below implement the same rules, so folding events one batch at a
 * time (live) or all at once (replay) yields the same tables.
 *
 * Merge rules, per column:
 * - plain columns: the newest non-null value wins (`COALESCE(new, old)`); an event leaves what it does not know
 *   as null, so it never erases a column another event set;
 * - `greatest` columns: the largest value wins (`GREATEST(new, old)`);
 * - one `versioned` group per table: its columns move together, taken from the patch with the highest version
 *   (ties: the newer patch). A patch that does not touch the group leaves its version null. This keeps a state
 *   from going backwards when an older event is applied late (an entry reclaimed after a crash).
 * All three are associative, which is what makes batch boundaries irrelevant.
 */

/** `messages`: one row per chat message, whether seen by the bot or sent by it. */
export interface MessageRow {
  /** The id of the event that carried the message (`message.observed|direct`, or `message.sent`). */
  eventId: string;
  groupId: string | null;
  /** The OneBot message id. */
  messageId: string | null;
  userId: string | null;
  displayName: string | null;
  text: string | null;
  segments: MessageSegment[] | null;
  direct: boolean | null;
  directReason: string | null;
  fromSelf: boolean | null;
  sentAt: Date | null;
  /** Set by `message.recalled` (when ingress knew which event carried the message). */
  recalledAt: Date | null;
}

/** `events`: the current state of every event the scheduler decides about. */
export interface EventStateRow {
  id: string;
  groupId: string | null;
  kind: string | null;
  state: EventState | null;
  reason: string | null;
  outcome: string | null;
  features: Record<string, number> | null;
  episodeId: string | null;
  updatedAt: Date | null;
  /** Version of `state`: the seq of the transition that set it (0 for `captured`). */
  transitionSeq: number | null;
}

/** `event_transitions`: the audit trail of the event state machine. */
export interface EventTransitionRow {
  eventId: string;
  seq: number;
  fromState: EventState | null;
  toState: EventState | null;
  reason: string | null;
  forced: boolean | null;
  at: Date | null;
  /** Who moved the event. */
  actor: string | null;
}

export type EpisodeState = 'thinking' | 'awaiting_observation' | 'final' | 'failed';

export interface EpisodeRow {
  id: string;
  groupId: string | null;
  triggerEventId: string | null;
  state: EpisodeState | null;
  outcome: string | null;
  model: string | null;
  attempt: number | null;
  maxSteps: number | null;
  deadline: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  steps: number | null;
  tokensIn: number | null;
  tokensOut: number | null;
  durationMs: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** Version of `state`: 1 started, 10 + 2·step a step, 11 + 2·step parked after it, 1000 completed. */
  phase: number | null;
  endedBy?: string | null;
  endReason?: string | null;
  llmCalls?: number | null;
  personaVersion?: string | null;
  plannerModel?: string | null;
  tokenBudget?: number | null;
  waitingCause?: string | null;
  resumeAt?: Date | null;
}

export interface EpisodeStepRow {
  episodeId: string;
  idx: number;
  thought: string | null;
  action: Record<string, unknown> | null;
  observation: Record<string, unknown> | null;
  tokensIn: number | null;
  tokensOut: number | null;
  latencyMs: number | null;
  at: Date | null;
  model?: string | null;
  llmCalls?: number | null;
}

/** `llm_calls`: one LLM call and its tokens. */
export interface LlmCallRow {
  callId: string;
  eventId: string | null;
  episodeId: string | null;
  groupId: string | null;
  role: string | null;
  model: string | null;
  purpose: string | null;
  outcome: string | null;
  tokensIn: number | null;
  tokensOut: number | null;
  estimated: boolean | null;
  attempts: number | null;
  latencyMs: number | null;
  step: number | null;
  at: Date | null;
}

/** `personas`: one persona policy version. */
export interface PersonaRow {
  version: string;
  name: string | null;
  source: string | null;
  policy: Record<string, unknown> | null;
  publishedAt: Date | null;
}

export type SendState = 'requested' | 'sent' | 'failed' | 'unknown' | 'dropped';

/** `sends`: the send ledger as the log tells it. `action.send` opens segment 0 (`requested`, the whole text); each
 * delivered, failed or unknown segment then records itself. */
export interface SendRow {
  actionId: string;
  segment: number;
  groupId: string | null;
  targetType: string | null;
  targetId: string | null;
  episodeId: string | null;
  triggerEventId: string | null;
  text: string | null;
  state: SendState | null;
  segmentCount: number | null;
  onebotMessageId: string | null;
  attempts: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  at: Date | null;
  /** Version of (`state`, `text`, `at`): 0 requested, 1 settled. */
  phase: number | null;
}

export type TimerState = 'scheduled' | 'fired' | 'cancelled';

/** `timers`: the scheduler's durable timers as the log tells them. */
export interface TimerRow {
  timerId: string;
  groupId: string | null;
  purpose: string | null;
  subjectEventId: string | null;
  episodeId: string | null;
  dueAt: Date | null;
  setAt: Date | null;
  firedAt: Date | null;
  state: TimerState | null;
  cancelReason: string | null;
  /** Version of `state`: 0 scheduled, 1 fired or cancelled. */
  phase: number | null;
}

/** `episode_controls`: one row per command sent to an episode. */
export interface EpisodeControlRow {
  episodeId: string;
  seq: number;
  groupId: string | null;
  command: string | null;
  reason: string | null;
  eventIds: string[] | null;
  supersededBy: string | null;
  cause: string | null;
  at: Date | null;
}

/** `notices`: OneBot notices (`notice.received`) and recalls (`message.recalled`). */
export interface NoticeRow {
  eventId: string;
  groupId: string | null;
  noticeType: string | null;
  subType: string | null;
  userId: string | null;
  operatorId: string | null;
  targetId: string | null;
  messageId: string | null;
  durationSeconds: number | null;
  aboutSelf: boolean | null;
  details: Record<string, string> | null;
  reportedAt: Date | null;
}

/** `requests`: friend / group requests (`request.received`). */
export interface RequestRow {
  eventId: string;
  groupId: string | null;
  requestType: string | null;
  subType: string | null;
  userId: string | null;
  comment: string | null;
  flag: string | null;
  reportedAt: Date | null;
}

export interface ReadModelRows {
  messages: MessageRow;
  events: EventStateRow;
  eventTransitions: EventTransitionRow;
  episodes: EpisodeRow;
  episodeSteps: EpisodeStepRow;
  sends: SendRow;
  agenda: AgendaRow;
  activities: ActivityRow;
  beats: BeatRow;
  agendaMilestones: AgendaMilestoneRow;
  memoryMessages: MemoryMessageRow;
  summaries: SummaryRow;
  facts: FactRow;
  jargon: JargonRow;
  llmCalls: LlmCallRow;
  personas: PersonaRow;
  timers: TimerRow;
  episodeControls: EpisodeControlRow;
  notices: NoticeRow;
  requests: RequestRow;
  threads: ThreadRow;
  groupActors: GroupActorRow;
  keywordSets: KeywordSetRow;
  keywordTerms: KeywordTermRow;
  keywordHits: KeywordHitRow;
}

export type ReadModel = keyof ReadModelRows;

export interface ReadModelRules<Row> {
  /** The primary key, in key order. */
  key: readonly (keyof Row)[];
  greatest?: readonly (keyof Row)[];
  versioned?: { version: keyof Row; columns: readonly (keyof Row)[] };
}

export const READ_MODEL_RULES: { [M in ReadModel]: ReadModelRules<ReadModelRows[M]> } = {
  messages: { key: ['eventId'] },
  events: {
    key: ['id'],
    greatest: ['updatedAt'],
    // The reason explains the state it came with: the decision's reason, or the newest transition's.
    versioned: { version: 'transitionSeq', columns: ['state', 'reason'] },
  },
  eventTransitions: { key: ['eventId', 'seq'] },
  episodes: { key: ['id'], versioned: { version: 'phase', columns: ['state', 'waitingCause', 'resumeAt'] } },
  episodeSteps: { key: ['episodeId', 'idx'] },
  sends: { key: ['actionId', 'segment'], versioned: { version: 'phase', columns: ['state', 'text', 'at'] } },
  agenda: { key: ['personaId'] },
  activities: {
    key: ['id'],
    versioned: {
      version: 'version',
      columns: ['status', 'phase', 'progress', 'nextBeatAt', 'mood', 'nextTitle', 'nextAt'],
    },
  },
  beats: { key: ['activityId', 'idx'] },
  agendaMilestones: { key: ['milestoneId'] },
  memoryMessages: { key: ['eventId'] },
  summaries: { key: ['summaryId'] },
  facts: { key: ['factId'], versioned: { version: 'version', columns: ['status', 'replacedBy'] } },
  jargon: { key: ['groupId', 'term'] },
  llmCalls: { key: ['callId'] },
  personas: { key: ['version'] },
  timers: { key: ['timerId'], versioned: { version: 'phase', columns: ['state'] } },
  episodeControls: { key: ['episodeId', 'seq'] },
  notices: { key: ['eventId'] },
  requests: { key: ['eventId'] },
  threads: {
    key: ['threadId'],
    versioned: {
      version: 'version',
      columns: [
        'lastActivityAt',
        'participants',
        'messages',
        'botJoined',
        'lastBotReplyAt',
        'openQuestions',
        'status',
        'lastLink',
      ],
    },
  },
  groupActors: {
    key: ['groupId'],
    versioned: {
      version: 'version',
      columns: [
        'lastBotReplyAt',
        'lastPartnerId',
        'repliesInWindow',
        'budget',
        'cooldownUntil',
        'activeThreads',
        'activeEvents',
        'reason',
        'updatedAt',
      ],
    },
  },
  keywordSets: { key: ['scope', 'ownerId'], versioned: { version: 'version', columns: ['terms', 'updatedAt'] } },
  keywordTerms: {
    key: ['termId'],
    versioned: {
      version: 'version',
      columns: [
        'aliases',
        'weight',
        'confidence',
        'status',
        'sightings',
        'lastSeenAt',
        'expiresAt',
        'lastChange',
        'reason',
        'changedAt',
      ],
    },
  },
  keywordHits: { key: ['eventId', 'termId'] },
};

export const READ_MODELS = Object.keys(READ_MODEL_RULES) as ReadModel[];

/** A patch: the key plus whatever columns one or more events know. */
export type RowPatch<Row> = Partial<Row>;

export type Projection = { [M in ReadModel]: Map<string, RowPatch<ReadModelRows[M]>> };

/** An event as stored in `event_log`, with its global apply position. */
export interface LoggedEvent {
  seq: number;
  event: EventEnvelope;
}

/** What the fold may know beyond the events it folds. */
export interface FoldContext {
  /**
   * The bot account that saw each trigger message (`payload.selfId`), with the trigger's log position; the
   * author of a `message.sent` is the account that saw its trigger, when the trigger was archived before it.
   */
  triggers: ReadonlyMap<string, { selfId: string; seq: number }>;
}

/** Author of a sent message whose trigger is unknown. */
export const UNKNOWN_SELF = 'self';

export function emptyProjection(): Projection {
  return {
    messages: new Map(),
    events: new Map(),
    eventTransitions: new Map(),
    episodes: new Map(),
    episodeSteps: new Map(),
    sends: new Map(),
    agenda: new Map(),
    activities: new Map(),
    beats: new Map(),
    agendaMilestones: new Map(),
    memoryMessages: new Map(),
    summaries: new Map(),
    facts: new Map(),
    jargon: new Map(),
    llmCalls: new Map(),
    personas: new Map(),
    timers: new Map(),
    episodeControls: new Map(),
    notices: new Map(),
    requests: new Map(),
    threads: new Map(),
    groupActors: new Map(),
    keywordSets: new Map(),
    keywordTerms: new Map(),
    keywordHits: new Map(),
  };
}

function lifePatches(projection: Projection): LifePatches {
  return {
    agenda: (patch) => put(projection, 'agenda', patch),
    activities: (patch) => put(projection, 'activities', patch),
    beats: (patch) => put(projection, 'beats', patch),
    agendaMilestones: (patch) => put(projection, 'agendaMilestones', patch),
  };
}

function attentionPatches(projection: Projection): AttentionPatches {
  return {
    threads: (patch) => put(projection, 'threads', patch),
    groupActors: (patch) => put(projection, 'groupActors', patch),
  };
}

function memoryPatches(projection: Projection): MemoryPatches {
  return {
    memoryMessages: (patch) => put(projection, 'memoryMessages', patch),
    summaries: (patch) => put(projection, 'summaries', patch),
    facts: (patch) => put(projection, 'facts', patch),
    jargon: (patch) => put(projection, 'jargon', patch),
  };
}

function keywordPatches(projection: Projection): KeywordPatches {
  return {
    keywordSets: (patch) => put(projection, 'keywordSets', patch),
    keywordTerms: (patch) => put(projection, 'keywordTerms', patch),
    keywordHits: (patch) => put(projection, 'keywordHits', patch),
  };
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

interface CompiledRules {
  grouped: ReadonlySet<PropertyKey>;
  greatest: ReadonlySet<PropertyKey>;
}

const compiled = new WeakMap<object, CompiledRules>();

function compile(rules: ReadModelRules<unknown>): CompiledRules {
  let out = compiled.get(rules);
  if (!out) {
    out = {
      grouped: new Set(rules.versioned ? [rules.versioned.version, ...rules.versioned.columns] : []),
      greatest: new Set(rules.greatest ?? []),
    };
    compiled.set(rules, out);
  }
  return out;
}

/** Merge `newer` over `older` by the table's rules (the in-memory twin of the writer's `ON CONFLICT` clause). */
export function mergeRow<Row>(rules: ReadModelRules<Row>, older: RowPatch<Row>, newer: RowPatch<Row>): RowPatch<Row> {
  const { grouped, greatest } = compile(rules as ReadModelRules<unknown>);
  const merged: RowPatch<Row> = { ...older };
  for (const column in newer) {
    if (grouped.has(column)) continue;
    const value = newer[column];
    if (!isSet(value)) continue;
    const current = merged[column];
    if (greatest.has(column) && isSet(current) && compare(current, value) >= 0) continue;
    merged[column] = value;
  }
  if (rules.versioned) {
    const { version, columns } = rules.versioned;
    const incoming = newer[version] as number | null | undefined;
    const existing = older[version] as number | null | undefined;
    if (isSet(incoming) && (!isSet(existing) || incoming! >= existing!)) {
      merged[version] = incoming as Row[keyof Row];
      for (const column of columns) merged[column] = newer[column];
    }
  }
  return merged;
}

function compare(a: unknown, b: unknown): number {
  const x = a instanceof Date ? a.getTime() : (a as number);
  const y = b instanceof Date ? b.getTime() : (b as number);
  return x === y ? 0 : x < y ? -1 : 1;
}

/** The map key of a row: its primary key values, joined. */
export function rowKey<Row>(rules: ReadModelRules<Row>, row: RowPatch<Row>): string {
  let key = String(row[rules.key[0]!]);
  for (let i = 1; i < rules.key.length; i++) key += `\u0000${String(row[rules.key[i]!])}`;
  return key;
}

function put<M extends ReadModel>(projection: Projection, model: M, patch: RowPatch<ReadModelRows[M]>): void {
  const rules = READ_MODEL_RULES[model] as ReadModelRules<ReadModelRows[M]>;
  const rows = projection[model] as Map<string, RowPatch<ReadModelRows[M]>>;
  const key = rowKey(rules, patch);
  const existing = rows.get(key);
  rows.set(key, existing ? mergeRow(rules, existing, patch) : patch);
}

/** `new Date(text)` or null when the text is no time (payload times are strings the producer filled). */
function timeOf(text: string | undefined): Date | null {
  if (text === undefined) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

function latest(transitions: readonly StateTransition[]): StateTransition | undefined {
  let last: StateTransition | undefined;
  for (const t of transitions) if (!last || t.seq >= last.seq) last = t;
  return last;
}

function addTransitions(
  projection: Projection,
  subjectEventId: string,
  transitions: readonly StateTransition[],
  at: Date,
): void {
  for (const t of transitions) {
    put(projection, 'eventTransitions', {
      eventId: subjectEventId,
      seq: t.seq,
      fromState: t.from,
      toState: t.to,
      reason: t.reason,
      forced: t.forced,
      at: timeOf(t.at) ?? at,
      actor: t.by ?? null,
    });
  }
}

/**
 * The thread, actor and timer facts a move event carries (ADR-0024), folded as the standalone events they stand
 * for, at the carrier's place in the log: the same rows a log of standalone `thread.updated`/`timer.scheduled`…
 * events gives.
 */
function foldTurn(projection: Projection, logged: LoggedEvent, context: FoldContext): void {
  for (const fact of unfoldTurn(logged.event)) foldOne(projection, { seq: logged.seq, event: fact }, context);
}

function foldOne(projection: Projection, logged: LoggedEvent, context: FoldContext): void {
  const event = logged.event;
  const at = new Date(event.createdAt);
  const kind = event.kind;
  switch (kind) {
    case EventKind.MessageObserved:
    case EventKind.MessageDirect: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'messages', {
        eventId: event.id,
        groupId: event.groupId,
        messageId: p.messageId,
        userId: p.sender.userId,
        displayName: p.sender.displayName,
        text: p.text,
        segments: p.segments,
        direct: kind === EventKind.MessageDirect,
        directReason: p.directReason ?? null,
        fromSelf: p.sender.userId === p.selfId,
        sentAt: new Date(p.sentAt * 1000),
      });
      foldMessageMemory(event as EventOf<typeof kind>, memoryPatches(projection));
      put(projection, 'events', {
        id: event.id,
        groupId: event.groupId,
        kind,
        state: 'captured',
        transitionSeq: 0,
        updatedAt: at,
      });
      return;
    }
    case EventKind.DecisionMade: {
      const p = (event as EventOf<typeof kind>).payload;
      const last = latest(p.transitions);
      put(projection, 'events', {
        id: p.subjectEventId,
        groupId: event.groupId,
        outcome: p.outcome,
        reason: p.reason,
        features: p.features,
        episodeId: p.episodeId ?? null,
        state: last?.to ?? null,
        transitionSeq: last?.seq ?? null,
        updatedAt: at,
      });
      addTransitions(projection, p.subjectEventId, p.transitions, at);
      foldDecisionHits(event as EventOf<typeof kind>, keywordPatches(projection));
      foldTurn(projection, logged, context);
      return;
    }
    case EventKind.EventTransitioned: {
      const p = (event as EventOf<typeof kind>).payload;
      const last = latest(p.transitions);
      put(projection, 'events', {
        id: p.subjectEventId,
        groupId: event.groupId,
        state: last?.to ?? null,
        reason: last?.reason ?? null,
        transitionSeq: last?.seq ?? null,
        updatedAt: at,
      });
      addTransitions(projection, p.subjectEventId, p.transitions, at);
      foldTurn(projection, logged, context);
      return;
    }
    case EventKind.EpisodeStarted: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'episodes', {
        id: p.episodeId,
        groupId: event.groupId,
        triggerEventId: p.triggerEventId,
        state: 'thinking',
        phase: 1,
        model: p.model,
        attempt: p.attempt,
        maxSteps: p.maxSteps,
        deadline: timeOf(p.deadline),
        startedAt: at,
        personaVersion: p.personaVersion ?? null,
        plannerModel: p.plannerModel ?? null,
        tokenBudget: p.tokenBudget ?? null,
      });
      return;
    }
    case EventKind.EpisodeStep: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'episodeSteps', {
        episodeId: p.episodeId,
        idx: p.index,
        thought: p.thought ?? null,
        action: p.action ? { ...p.action } : null,
        observation: p.observation ? { ...p.observation } : null,
        tokensIn: p.tokensIn,
        tokensOut: p.tokensOut,
        latencyMs: p.latencyMs,
        at,
        model: p.model ?? null,
        llmCalls: p.llmCalls ?? null,
      });
      put(projection, 'episodes', {
        id: p.episodeId,
        groupId: event.groupId,
        state: 'thinking',
        phase: 10 + 2 * p.index,
        waitingCause: null,
        resumeAt: null,
      });
      return;
    }
    case EventKind.EpisodeCompleted: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'episodes', {
        id: p.episodeId,
        groupId: event.groupId,
        triggerEventId: p.triggerEventId,
        state: p.outcome === 'failed' ? 'failed' : 'final',
        phase: 1000,
        waitingCause: null,
        resumeAt: null,
        endedBy: p.endedBy ?? null,
        endReason: p.reason ?? null,
        llmCalls: p.llmCalls ?? null,
        outcome: p.outcome,
        finishedAt: at,
        steps: p.steps,
        tokensIn: p.tokensIn,
        tokensOut: p.tokensOut,
        durationMs: p.durationMs,
        errorCode: p.error?.code ?? null,
        errorMessage: p.error?.message ?? null,
      });
      return;
    }
    case EventKind.ActionSend: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'sends', {
        actionId: p.actionId,
        segment: 0,
        groupId: event.groupId,
        targetType: p.targetType,
        targetId: p.targetId,
        episodeId: p.episodeId,
        triggerEventId: p.triggerEventId,
        text: p.text,
        state: 'requested',
        at,
        phase: 0,
      });
      return;
    }
    case EventKind.MessageSent: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'sends', {
        ...settledSend(event, p, at),
        state: 'sent',
        onebotMessageId: p.onebotMessageId,
      });
      const trigger = context.triggers.get(p.triggerEventId);
      put(projection, 'messages', {
        eventId: event.id,
        groupId: event.groupId,
        messageId: p.onebotMessageId,
        userId: trigger && trigger.seq < logged.seq ? trigger.selfId : UNKNOWN_SELF,
        text: p.text,
        direct: false,
        fromSelf: true,
        sentAt: at,
      });
      foldSentMemory(
        event as EventOf<typeof kind>,
        trigger && trigger.seq < logged.seq ? trigger.selfId : UNKNOWN_SELF,
        null,
        memoryPatches(projection),
      );
      return;
    }
    case EventKind.SendFailed:
    case EventKind.SendUnknown: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'sends', {
        ...settledSend(event, p, at),
        state: kind === EventKind.SendFailed ? 'failed' : 'unknown',
        errorCode: p.error.code,
        errorMessage: p.error.message,
      });
      return;
    }
    case EventKind.EpisodeWaiting: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'episodes', {
        id: p.episodeId,
        groupId: event.groupId,
        triggerEventId: p.triggerEventId,
        state: 'awaiting_observation',
        phase: 11 + 2 * p.step,
        waitingCause: p.cause,
        resumeAt: timeOf(p.resumeAt ?? p.timeoutAt),
      });
      return;
    }
    case EventKind.LlmCalled: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'llmCalls', {
        callId: p.callId,
        eventId: event.id,
        episodeId: p.episodeId ?? null,
        groupId: event.groupId,
        role: p.role,
        model: p.model,
        purpose: p.purpose,
        outcome: p.outcome,
        tokensIn: p.tokensIn,
        tokensOut: p.tokensOut,
        estimated: p.estimated,
        attempts: p.attempts,
        latencyMs: p.latencyMs,
        step: p.step ?? null,
        at,
      });
      return;
    }
    case EventKind.TimerScheduled: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'timers', {
        timerId: p.timerId,
        groupId: event.groupId,
        purpose: p.purpose,
        subjectEventId: p.subjectEventId ?? null,
        episodeId: p.episodeId ?? null,
        dueAt: timeOf(p.dueAt),
        setAt: p.setAt !== undefined ? new Date(p.setAt) : at,
        state: 'scheduled',
        phase: 0,
      });
      return;
    }
    case EventKind.TimerFired: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'timers', {
        timerId: p.timerId,
        groupId: event.groupId,
        purpose: p.purpose,
        subjectEventId: p.subjectEventId ?? null,
        episodeId: p.episodeId ?? null,
        dueAt: timeOf(p.dueAt),
        firedAt: at,
        state: 'fired',
        phase: 1,
      });
      return;
    }
    case EventKind.TimerCancelled: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'timers', {
        timerId: p.timerId,
        groupId: event.groupId,
        purpose: p.purpose,
        cancelReason: p.reason,
        state: 'cancelled',
        phase: 1,
      });
      return;
    }
    case EventKind.EpisodeControl: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'episodeControls', {
        episodeId: p.episodeId,
        seq: p.seq,
        groupId: event.groupId,
        command: p.command,
        reason: p.reason,
        eventIds: p.eventIds ?? null,
        supersededBy: p.supersededBy ?? null,
        cause: p.cause ?? null,
        at,
      });
      return;
    }
    case EventKind.PersonaPublished: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'personas', {
        version: p.version,
        name: p.name,
        source: p.source,
        policy: p.policy,
        publishedAt: at,
      });
      return;
    }
    case EventKind.MonitorRecorded:
      // Monitor events are for the panel's live view; event_log keeps them.
      return;
    case EventKind.PersonalActivityStarted:
    case EventKind.PersonalActivityBeat:
    case EventKind.PersonalActivityCompleted:
    case EventKind.PersonalAgendaLoaded:
    case EventKind.PersonalActivityDetailed:
    case EventKind.PersonalMilestoneReached:
      foldLifeEvent(event as EventOf<typeof kind>, lifePatches(projection));
      return;
    case EventKind.MemorySummaryWritten:
    case EventKind.MemoryFactLearned:
    case EventKind.MemoryJargonLearned:
      foldMemoryEvent(event as EventOf<typeof kind>, memoryPatches(projection));
      return;
    case EventKind.MessageEchoed: {
      // The bot's own message as the implementation reported it: the bot's, never input.
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'messages', {
        eventId: event.id,
        groupId: event.groupId,
        messageId: p.messageId,
        userId: p.sender.userId,
        displayName: p.sender.displayName,
        text: p.text,
        segments: p.segments,
        direct: false,
        fromSelf: true,
        sentAt: new Date(p.sentAt * 1000),
      });
      return;
    }
    case EventKind.MessageRecalled: {
      const p = (event as EventOf<typeof kind>).payload;
      const recalledAt = new Date(p.recalledAt * 1000);
      if (p.eventId !== undefined) put(projection, 'messages', { eventId: p.eventId, recalledAt });
      put(projection, 'notices', {
        eventId: event.id,
        groupId: event.groupId,
        noticeType: p.messageType === 'group' ? 'group_recall' : 'friend_recall',
        userId: p.userId,
        operatorId: p.operatorId,
        messageId: p.messageId,
        aboutSelf: p.userId === p.selfId,
        reportedAt: recalledAt,
      });
      return;
    }
    case EventKind.NoticeReceived: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'notices', {
        eventId: event.id,
        groupId: event.groupId,
        noticeType: p.noticeType,
        subType: p.subType ?? null,
        userId: p.userId ?? null,
        operatorId: p.operatorId ?? null,
        targetId: p.targetId ?? null,
        messageId: p.messageId ?? null,
        durationSeconds: p.durationSeconds ?? null,
        aboutSelf: p.aboutSelf,
        details: p.details,
        reportedAt: new Date(p.reportedAt * 1000),
      });
      return;
    }
    case EventKind.RequestReceived: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'requests', {
        eventId: event.id,
        groupId: event.groupId,
        requestType: p.requestType,
        subType: p.subType ?? null,
        userId: p.userId,
        comment: p.comment,
        flag: p.flag,
        reportedAt: new Date(p.reportedAt * 1000),
      });
      return;
    }
    case EventKind.SendDropped: {
      const p = (event as EventOf<typeof kind>).payload;
      put(projection, 'sends', {
        actionId: p.actionId,
        segment: p.partsSent,
        groupId: event.groupId,
        targetType: p.targetType,
        targetId: p.targetId,
        episodeId: p.episodeId,
        triggerEventId: p.triggerEventId,
        text: p.text,
        state: 'dropped',
        errorCode: 'SEND.TRIGGER_RECALLED',
        at,
        phase: 1,
      });
      return;
    }
    case EventKind.ThreadUpdated:
    case EventKind.ThreadIdle:
    case EventKind.GroupActorUpdated:
      foldAttentionEvent(event as EventOf<typeof kind>, attentionPatches(projection));
      return;
    case EventKind.KeywordTermChanged:
    case EventKind.KeywordLexiconVersioned:
    case EventKind.KeywordControlRequested:
      foldKeywordEvent(event as EventOf<typeof kind>, keywordPatches(projection));
      return;
    case EventKind.SendVerified:
    case EventKind.ToolResult:
      // No read model yet; event_log keeps these events for the issues that project them.
      return;
  }
}

function settledSend(
  event: EventEnvelope,
  p: EventOf<'message.sent' | 'send.failed' | 'send.unknown'>['payload'],
  at: Date,
): RowPatch<SendRow> {
  return {
    actionId: p.actionId,
    segment: p.segmentIndex,
    groupId: event.groupId,
    targetType: p.targetType,
    targetId: p.targetId,
    episodeId: p.episodeId,
    triggerEventId: p.triggerEventId,
    text: p.text,
    segmentCount: p.segmentCount,
    attempts: p.attempts,
    at,
    phase: 1,
  };
}

/** Trigger events whose `selfId` the fold needs (the triggers of `message.sent` events). */
export function triggersNeeded(events: readonly LoggedEvent[]): string[] {
  const ids = new Set<string>();
  for (const { event } of events) {
    if (event.kind === EventKind.MessageSent) ids.add((event as EventOf<'message.sent'>).payload.triggerEventId);
  }
  return [...ids];
}

/** Fold events, in log order, into one patch per read-model row. */
export function foldEvents(events: readonly LoggedEvent[], context: FoldContext): Projection {
  const projection = emptyProjection();
  for (const logged of events) foldOne(projection, logged, context);
  return projection;
}
