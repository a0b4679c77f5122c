import { plainToInstance } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsISO8601,
  IsObject,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  validateSync,
  type ValidationError,
} from 'class-validator';
import { v7 as uuidv7 } from 'uuid';
import { ValidationFailed, type FieldError } from './errors.js';
import { ALL_EVENT_KINDS, EventKind } from './event-kinds.js';
import { GroupActorUpdatedPayload, ThreadIdlePayload, ThreadUpdatedPayload } from './attention.js';
import { NoticePayload, RequestPayload, SendDroppedPayload, SendVerifiedPayload } from './edge.js';
import { MessagePayload } from './message.js';
import {
  ActionSendPayload,
  DecisionPayload,
  EpisodeCompletedPayload,
  EpisodeStartedPayload,
  EpisodeStepPayload,
  EventTransitionedPayload,
  MessageSentPayload,
  PersonalActivityPayload,
  SendProblemPayload,
} from './payloads.js';
import {
  EpisodeControlPayload,
  EpisodeWaitingPayload,
  MessageRecalledPayload,
  TimerCancelledPayload,
  TimerFiredPayload,
  TimerScheduledPayload,
  ToolResultPayload,
} from './runtime.js';
import {
  PersonalActivityDetailedPayload,
  PersonalAgendaLoadedPayload,
  PersonalMilestoneReachedPayload,
} from './life.js';
import { MemoryFactLearnedPayload, MemoryJargonLearnedPayload, MemorySummaryWrittenPayload } from './memory.js';
import { LlmCalledPayload, MonitorRecordedPayload, PersonaPublishedPayload } from './observability.js';
import {
  KeywordControlRequestedPayload,
  KeywordLexiconVersionedPayload,
  KeywordTermChangedPayload,
} from './payloads.js';

export const SCHEMA_VERSION = 1;

/** Highest priority first: 0 is the most urgent (a direct @), 9 the least. */
export const PRIORITY = { direct: 0, action: 1, normal: 5, background: 9 } as const;

/**
 * The one shape every fact in the log takes. Validated when written and when read; an envelope that does not
 * validate never reaches a handler (it is counted and dead-lettered).
 */
export class EventEnvelope<P = unknown> {
  /** UUIDv7: unique and time-ordered. */
  @IsString()
  @MaxLength(64)
  id!: string;

  @IsIn(ALL_EVENT_KINDS)
  kind!: EventKind;

  /** The QQ group this event belongs to; `null` for events of the bot itself (its life line). */
  @IsOptional()
  @IsString()
  @MaxLength(32)
  groupId!: string | null;

  @IsOptional()
  @IsString()
  threadId?: string;

  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(64)
  actorIds!: string[];

  /** Event ids of the messages this event rests on. */
  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(256)
  evidenceMessageIds!: string[];

  @IsISO8601()
  createdAt!: string;

  @IsOptional()
  @IsISO8601()
  notBefore?: string;

  @IsOptional()
  @IsISO8601()
  deadline?: string;

  @IsInt()
  @Min(0)
  @Max(9)
  priority!: number;

  @IsObject()
  payload!: P;

  /** The id of the first event of the chain (the message that started it all). */
  @IsString()
  correlationId!: string;

  /** The id of the event that directly caused this one; `null` for events from outside. */
  @IsOptional()
  @IsString()
  causationId!: string | null;

  /** The service that wrote the event. */
  @IsString()
  @MaxLength(32)
  source!: string;

  @IsInt()
  @Min(1)
  schemaVersion!: number;
}

type PayloadClass = new () => object;

export const PAYLOAD_CLASSES: Record<EventKind, PayloadClass> = {
  [EventKind.MessageObserved]: MessagePayload,
  [EventKind.MessageDirect]: MessagePayload,
  [EventKind.DecisionMade]: DecisionPayload,
  [EventKind.EventTransitioned]: EventTransitionedPayload,
  [EventKind.EpisodeStarted]: EpisodeStartedPayload,
  [EventKind.EpisodeStep]: EpisodeStepPayload,
  [EventKind.EpisodeCompleted]: EpisodeCompletedPayload,
  [EventKind.ActionSend]: ActionSendPayload,
  [EventKind.MessageSent]: MessageSentPayload,
  [EventKind.SendFailed]: SendProblemPayload,
  [EventKind.SendUnknown]: SendProblemPayload,
  [EventKind.MessageRecalled]: MessageRecalledPayload,
  [EventKind.TimerFired]: TimerFiredPayload,
  [EventKind.TimerScheduled]: TimerScheduledPayload,
  [EventKind.TimerCancelled]: TimerCancelledPayload,
  [EventKind.EpisodeControl]: EpisodeControlPayload,
  [EventKind.EpisodeWaiting]: EpisodeWaitingPayload,
  [EventKind.ToolResult]: ToolResultPayload,
  [EventKind.LlmCalled]: LlmCalledPayload,
  [EventKind.PersonaPublished]: PersonaPublishedPayload,
  [EventKind.MonitorRecorded]: MonitorRecordedPayload,
  [EventKind.MessageEchoed]: MessagePayload,
  [EventKind.NoticeReceived]: NoticePayload,
  [EventKind.RequestReceived]: RequestPayload,
  [EventKind.SendDropped]: SendDroppedPayload,
  [EventKind.SendVerified]: SendVerifiedPayload,
  [EventKind.PersonalActivityStarted]: PersonalActivityPayload,
  [EventKind.PersonalActivityBeat]: PersonalActivityPayload,
  [EventKind.PersonalActivityCompleted]: PersonalActivityPayload,
  [EventKind.PersonalAgendaLoaded]: PersonalAgendaLoadedPayload,
  [EventKind.PersonalActivityDetailed]: PersonalActivityDetailedPayload,
  [EventKind.PersonalMilestoneReached]: PersonalMilestoneReachedPayload,
  [EventKind.MemorySummaryWritten]: MemorySummaryWrittenPayload,
  [EventKind.MemoryFactLearned]: MemoryFactLearnedPayload,
  [EventKind.MemoryJargonLearned]: MemoryJargonLearnedPayload,
  [EventKind.ThreadUpdated]: ThreadUpdatedPayload,
  [EventKind.ThreadIdle]: ThreadIdlePayload,
  [EventKind.GroupActorUpdated]: GroupActorUpdatedPayload,
  [EventKind.KeywordTermChanged]: KeywordTermChangedPayload,
  [EventKind.KeywordLexiconVersioned]: KeywordLexiconVersionedPayload,
  [EventKind.KeywordControlRequested]: KeywordControlRequestedPayload,
};

/** Kind → payload type, for typed handlers: `EventEnvelope<PayloadOf<'message.direct'>>`. */
export interface PayloadMap {
  'message.observed': MessagePayload;
  'message.direct': MessagePayload;
  'decision.made': DecisionPayload;
  'event.transitioned': EventTransitionedPayload;
  'episode.started': EpisodeStartedPayload;
  'episode.step': EpisodeStepPayload;
  'episode.completed': EpisodeCompletedPayload;
  'action.send': ActionSendPayload;
  'message.sent': MessageSentPayload;
  'send.failed': SendProblemPayload;
  'send.unknown': SendProblemPayload;
  'message.recalled': MessageRecalledPayload;
  'timer.fired': TimerFiredPayload;
  'timer.scheduled': TimerScheduledPayload;
  'timer.cancelled': TimerCancelledPayload;
  'episode.control': EpisodeControlPayload;
  'episode.waiting': EpisodeWaitingPayload;
  'tool.result': ToolResultPayload;
  'llm.called': LlmCalledPayload;
  'persona.published': PersonaPublishedPayload;
  'monitor.recorded': MonitorRecordedPayload;
  'message.echoed': MessagePayload;
  'notice.received': NoticePayload;
  'request.received': RequestPayload;
  'send.dropped': SendDroppedPayload;
  'send.verified': SendVerifiedPayload;
  'personal.activity.started': PersonalActivityPayload;
  'personal.activity.beat': PersonalActivityPayload;
  'personal.activity.completed': PersonalActivityPayload;
  'personal.agenda.loaded': PersonalAgendaLoadedPayload;
  'personal.activity.detailed': PersonalActivityDetailedPayload;
  'personal.milestone.reached': PersonalMilestoneReachedPayload;
  'memory.summary.written': MemorySummaryWrittenPayload;
  'memory.fact.learned': MemoryFactLearnedPayload;
  'memory.jargon.learned': MemoryJargonLearnedPayload;
  'thread.updated': ThreadUpdatedPayload;
  'thread.idle': ThreadIdlePayload;
  'group.actor.updated': GroupActorUpdatedPayload;
  'keyword.term.changed': KeywordTermChangedPayload;
  'keyword.lexicon.versioned': KeywordLexiconVersionedPayload;
  'keyword.control.requested': KeywordControlRequestedPayload;
}
export type PayloadOf<K extends EventKind> = PayloadMap[K];
export type EventOf<K extends EventKind> = EventEnvelope<PayloadOf<K>> & { kind: K };

/** class-validator's nested errors as a flat list of field paths (`payload.sender.role`). */
export function flattenValidationErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const path = prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints) {
      out.push({ path, message: Object.values(error.constraints).join(', ') });
    }
    if (error.children?.length) {
      out.push(...flattenValidationErrors(error.children, path));
    }
  }
  return out;
}

const VALIDATION_OPTIONS = { forbidUnknownValues: true, whitelist: false } as const;

/**
 * Check a plain object against the envelope and its kind's payload class.
 * Returns the field errors, empty when valid. Does not throw.
 */
export function envelopeErrors(plain: unknown): FieldError[] {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) {
    return [{ path: '', message: 'must be an object' }];
  }
  const envelope = plainToInstance(EventEnvelope, plain);
  const errors = flattenValidationErrors(validateSync(envelope, VALIDATION_OPTIONS));
  if (errors.length > 0) return errors;
  const payloadClass = PAYLOAD_CLASSES[envelope.kind];
  const payload = plainToInstance(payloadClass, envelope.payload as object);
  return flattenValidationErrors(validateSync(payload, VALIDATION_OPTIONS), 'payload');
}

/** Validate and return the envelope as a plain object; throws `ValidationFailed` naming every bad field. */
export function parseEnvelope<P = unknown>(plain: unknown): EventEnvelope<P> {
  const errors = envelopeErrors(plain);
  if (errors.length > 0) throw new ValidationFailed('event envelope', errors);
  return plain as EventEnvelope<P>;
}

/**
 * Random bytes for event ids, drawn from the system 256 ids at a time: `uuid` asks `crypto.getRandomValues` for 16
 * bytes per id, and a busy scheduler makes several ids per message (about 2% of its CPU went there).
 */
const RANDOM_POOL = new Uint8Array(16 * 256);
let randomAt = RANDOM_POOL.length;
/** UUIDv7's clock and counter, kept as `uuid` keeps them, so ids made in one millisecond still sort in order. */
const v7Clock = { msecs: Number.NEGATIVE_INFINITY, seq: 0 };

function pooledRandom(): Uint8Array {
  if (randomAt + 16 > RANDOM_POOL.length) {
    globalThis.crypto.getRandomValues(RANDOM_POOL);
    randomAt = 0;
  }
  const bytes = RANDOM_POOL.subarray(randomAt, randomAt + 16);
  randomAt += 16;
  return bytes;
}

export function newEventId(): string {
  const random = pooledRandom();
  const now = Date.now();
  if (now > v7Clock.msecs) {
    // A fresh millisecond starts the counter at a random 31-bit value (RFC 9562 §6.2, method 1), as `uuid` does.
    v7Clock.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
    v7Clock.msecs = now;
  } else {
    v7Clock.seq = (v7Clock.seq + 1) | 0;
    if (v7Clock.seq === 0) v7Clock.msecs++;
  }
  return uuidv7({ random, msecs: v7Clock.msecs, seq: v7Clock.seq });
}

export interface NewEvent<K extends EventKind> {
  kind: K;
  groupId: string | null;
  payload: PayloadOf<K>;
  source: string;
  /** The event this one follows from; sets correlation and causation. */
  cause?: Pick<EventEnvelope, 'id' | 'correlationId'> | null;
  threadId?: string;
  actorIds?: string[];
  evidenceMessageIds?: string[];
  priority?: number;
  notBefore?: Date;
  deadline?: Date;
  /** Defaults to now; pass the clock's time to keep replays deterministic. */
  createdAt?: Date;
  id?: string;
}

/** Build an envelope with ids, causation and defaults filled in. */
export function makeEvent<K extends EventKind>(spec: NewEvent<K>): EventOf<K> {
  const id = spec.id ?? newEventId();
  const event: EventEnvelope<PayloadOf<K>> = {
    id,
    kind: spec.kind,
    groupId: spec.groupId,
    actorIds: spec.actorIds ?? [],
    evidenceMessageIds: spec.evidenceMessageIds ?? [],
    createdAt: (spec.createdAt ?? new Date()).toISOString(),
    priority: spec.priority ?? PRIORITY.normal,
    payload: spec.payload,
    correlationId: spec.cause?.correlationId ?? id,
    causationId: spec.cause?.id ?? null,
    source: spec.source,
    schemaVersion: SCHEMA_VERSION,
  };
  if (spec.threadId !== undefined) event.threadId = spec.threadId;
  if (spec.notBefore) event.notBefore = spec.notBefore.toISOString();
  if (spec.deadline) event.deadline = spec.deadline.toISOString();
  return event as EventOf<K>;
}
