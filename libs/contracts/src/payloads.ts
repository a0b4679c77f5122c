import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { EPISODE_END_CAUSES, type EpisodeEndCause } from './actions.js';
import { EVENT_STATES, type EventState } from './event-state.js';
import { MessageSegment } from './message.js';
import { SchedulerTurnFacts } from './turn-facts.js';

export class StateTransition {
  /** 1-based position of this transition in the subject event's audit trail. */
  @IsInt()
  @Min(1)
  seq!: number;

  @IsIn(EVENT_STATES)
  from!: EventState;

  @IsIn(EVENT_STATES)
  to!: EventState;

  @IsString()
  reason!: string;

  /** True when the transition bypassed the allowed-transitions table (`force()`). */
  @IsBoolean()
  forced!: boolean;

  /** Who moved the event: `scheduler`, `operator:<name>`… (absent in events written before the runtime spine). */
  @IsOptional()
  @IsString()
  @MaxLength(64)
  by?: string;

  /** When, in product time (absent: the envelope's `createdAt`). */
  @IsOptional()
  @IsISO8601()
  at?: string;
}

export const DECISION_OUTCOMES = ['deliberate', 'skip', 'snooze', 'expire'] as const;
export type DecisionOutcome = (typeof DECISION_OUTCOMES)[number];

export const KEYWORD_SCOPES = ['global', 'group', 'thread', 'persona', 'activity', 'game'] as const;
/** Where a keyword term applies: everywhere, one group, one thread, the persona, an activity, a game or tool. */
export type KeywordScope = (typeof KEYWORD_SCOPES)[number];

/** One lexicon term that matched a decided event's text. */
export class DecisionKeywordHit {
  @IsString()
  @MaxLength(128)
  termId!: string;

  @IsString()
  @MaxLength(64)
  term!: string;

  @IsIn(KEYWORD_SCOPES)
  scope!: KeywordScope;

  @IsNumber()
  weight!: number;
}

/** `decision.made`: what the scheduler decided about one event and why. */
export class DecisionPayload {
  @IsString()
  subjectEventId!: string;

  @IsIn(DECISION_OUTCOMES)
  outcome!: DecisionOutcome;

  /** One line a person can read: "deliberate: @-mentioned the bot". */
  @IsString()
  reason!: string;

  /** The feature vector behind the decision (directness, attention, …). */
  @IsObject()
  features!: Record<string, number>;

  @IsOptional()
  @IsString()
  episodeId?: string;

  /** The thread the event was linked to (attention), when it has one. */
  @IsOptional()
  @IsString()
  @MaxLength(128)
  threadId?: string;

  /** The lexicon terms that hit the event's text, so keyword feedback can follow hit → episode → reply. */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => DecisionKeywordHit)
  keywordHits?: DecisionKeywordHit[];

  @ValidateNested({ each: true })
  @Type(() => StateTransition)
  transitions!: StateTransition[];

  /**
   * The turn's other facts (threads, the group actor, timers), carried here instead of as envelopes of their own
   * (ADR-0024). On at most one move event per turn.
   */
  @IsOptional()
  @ValidateNested()
  @Type(() => SchedulerTurnFacts)
  turn?: SchedulerTurnFacts;
}

/** `event.transitioned`: the subject event moved on after its decision (deliberating → replied, …). */
export class EventTransitionedPayload {
  @IsString()
  subjectEventId!: string;

  @ValidateNested({ each: true })
  @Type(() => StateTransition)
  transitions!: StateTransition[];

  /**
   * The turn's other facts (threads, the group actor, timers), carried here instead of as envelopes of their own
   * (ADR-0024). On at most one move event per turn.
   */
  @IsOptional()
  @ValidateNested()
  @Type(() => SchedulerTurnFacts)
  turn?: SchedulerTurnFacts;
}

export class EpisodeStartedPayload {
  @IsString()
  episodeId!: string;

  @IsString()
  triggerEventId!: string;

  @IsString()
  model!: string;

  /** ISO time after which the episode gives up. */
  @IsString()
  deadline!: string;

  @IsInt()
  @Min(1)
  maxSteps!: number;

  /** Which attempt of the episode job this is (1 on first delivery). */
  @IsInt()
  @Min(1)
  attempt!: number;

  /** The persona policy version in force (`persona.published`). */
  @IsOptional()
  @IsString()
  personaVersion?: string;

  /** Tokens (in + out) the episode may spend. */
  @IsOptional()
  @IsInt()
  @Min(0)
  tokenBudget?: number;

  /** The planner's model (`model` is the replyer's, as before the split). */
  @IsOptional()
  @IsString()
  plannerModel?: string;
}

export class EpisodeAction {
  /** `reply`, `no_reply`, `tool_call`, … */
  @IsString()
  type!: string;

  @IsOptional()
  @IsObject()
  args?: Record<string, unknown>;
}

export class EpisodeObservation {
  @IsBoolean()
  ok!: boolean;

  @IsString()
  summary!: string;

  @IsOptional()
  @IsString()
  errorCode?: string;
}

/** `episode.step`: one Thought / Action / Observation of an episode. */
export class EpisodeStepPayload {
  @IsString()
  episodeId!: string;

  /** 0-based. */
  @IsInt()
  @Min(0)
  index!: number;

  @IsOptional()
  @IsString()
  thought?: string;

  @IsOptional()
  @ValidateNested()
  @Type(() => EpisodeAction)
  action?: EpisodeAction;

  @IsOptional()
  @ValidateNested()
  @Type(() => EpisodeObservation)
  observation?: EpisodeObservation;

  @IsInt()
  @Min(0)
  tokensIn!: number;

  @IsInt()
  @Min(0)
  tokensOut!: number;

  @IsNumber()
  @Min(0)
  latencyMs!: number;

  /** The model that answered this step (the planner's; the replyer's when the step wrote a reply). */
  @IsOptional()
  @IsString()
  model?: string;

  /** LLM calls the step made (planner + replyer). */
  @IsOptional()
  @IsInt()
  @Min(0)
  llmCalls?: number;
}

/** `cancelled` and `superseded` follow an `episode.control` command; they never act. */
export const EPISODE_OUTCOMES = ['replied', 'no_reply', 'failed', 'cancelled', 'superseded'] as const;
export type EpisodeOutcome = (typeof EPISODE_OUTCOMES)[number];

export class ErrorInfo {
  @IsString()
  code!: string;

  @IsString()
  message!: string;
}

/** At most this many ids in `answeredEventIds` (cognition keeps the newest). */
export const ANSWERED_EVENT_IDS_MAX = 256;

export class EpisodeCompletedPayload {
  @IsString()
  episodeId!: string;

  @IsString()
  triggerEventId!: string;

  @IsIn(EPISODE_OUTCOMES)
  outcome!: EpisodeOutcome;

  @IsOptional()
  @ValidateNested()
  @Type(() => ErrorInfo)
  error?: ErrorInfo;

  @IsInt()
  @Min(0)
  steps!: number;

  @IsInt()
  @Min(0)
  tokensIn!: number;

  @IsInt()
  @Min(0)
  tokensOut!: number;

  @IsNumber()
  @Min(0)
  durationMs!: number;

  /** What ended it: an action, or a limit (deadline, token budget, steps), or a control command. */
  @IsOptional()
  @IsIn(EPISODE_END_CAUSES)
  endedBy?: EpisodeEndCause;

  /** One line a person can read. */
  @IsOptional()
  @IsString()
  reason?: string;

  @IsOptional()
  @IsInt()
  @Min(0)
  llmCalls?: number;

  /**
   * The event ids the episode's replies covered (targets, their fragments, the follow-ups they took in), for an
   * episode that replied. The scheduler marks only these replied and decides the episode's other events again: an
   * interrupt committed after the episode's last look at its control record is not covered by any reply. Absent in
   * entries written before it existed, which cover every event of the episode.
   */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(ANSWERED_EVENT_IDS_MAX)
  answeredEventIds?: string[];
}

/** `action.send`: say `text` in a group. The action id is deterministic per episode step, so a re-run episode
 * produces the same id and outbound's ledger keeps it from being sent twice. */
export class ActionSendPayload {
  @IsString()
  actionId!: string;

  @IsString()
  episodeId!: string;

  @IsString()
  triggerEventId!: string;

  @IsIn(['group', 'private'])
  targetType!: 'group' | 'private';

  /** Group id for group targets, user id for private ones. */
  @IsString()
  targetId!: string;

  @IsString()
  text!: string;

  /** Quote this OneBot message id in the first segment. */
  @IsOptional()
  @IsString()
  quoteMessageId?: string;

  /** The sender being answered (one sender: replies never merge senders). */
  @IsOptional()
  @IsString()
  toUserId?: string;

  /**
   * Non-text content to send instead of `text` (a sticker's image segment); `text` then holds its readable
   * rendering (`[表情：…]`) for logs and prompts.
   */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => MessageSegment)
  segments?: MessageSegment[];

  /**
   * Why the bot says this, for a reply that goes to another group or chat than its trigger's (a cross-group
   * reply). Never sent to users: outbound records it on `message.sent` so the target group's context knows why
   * the bot spoke there (the oh-mai-agent motivation note).
   */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  motivation?: string;

  /**
   * The event ids the episode's replies covered so far, this one included (cumulative, as on
   * `episode.completed`). Carried by the send because its `message.sent` may reach the scheduler before the
   * episode completes: the events named here are answered once it is delivered. Absent: the send covers every
   * event of the episode (entries written before it existed).
   */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(ANSWERED_EVENT_IDS_MAX)
  answeredEventIds?: string[];
}

class SendOutcomeBase {
  @IsString()
  actionId!: string;

  @IsString()
  episodeId!: string;

  @IsString()
  triggerEventId!: string;

  @IsIn(['group', 'private'])
  targetType!: 'group' | 'private';

  @IsString()
  targetId!: string;

  @IsInt()
  @Min(0)
  segmentIndex!: number;

  @IsInt()
  @Min(1)
  segmentCount!: number;

  @IsString()
  text!: string;

  @IsInt()
  @Min(1)
  attempts!: number;
}

/** `message.sent`: one segment of an action was delivered. */
export class MessageSentPayload extends SendOutcomeBase {
  /** OneBot message id of the delivered message. */
  @IsString()
  onebotMessageId!: string;

  /** True when the outcome was unknown and the message was found in the implementation's history. */
  @IsOptional()
  @IsBoolean()
  verified?: boolean;

  /** `forward` when the reply went out folded into one forward message. */
  @IsOptional()
  @IsIn(['text', 'forward'])
  form?: 'text' | 'forward';

  /** The motivation note of a cross-group reply (never shown to users; see `ActionSendPayload.motivation`). */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  motivation?: string;
}

/** `send.failed` and `send.unknown`. */
export class SendProblemPayload extends SendOutcomeBase {
  @ValidateNested()
  @Type(() => ErrorInfo)
  error!: ErrorInfo;

  @IsOptional()
  @IsInt()
  retcode?: number;
}

/** One phase of an activity: it lasts until `until` (0–1] of the planned duration. */
export class ActivityPhase {
  @IsString()
  name!: string;

  @IsNumber()
  @Min(0)
  until!: number;
}

/** `personal.activity.*`: the bot's own life line moved. */
export class PersonalActivityPayload {
  @IsString()
  activityId!: string;

  @IsString()
  title!: string;

  @IsString()
  description!: string;

  /** ISO time the activity started. */
  @IsString()
  startedAt!: string;

  @IsInt()
  @Min(0)
  expectedDurationMinutes!: number;

  @IsNumber()
  @Min(0)
  progress!: number;

  @IsOptional()
  @IsString()
  beat?: string;

  /* Added by the life-director issue; absent on events written before it. */

  /** `personal.activity.beat`: which of the activity's beats this is (0-based). */
  @IsOptional()
  @IsInt()
  @Min(0)
  beatIndex?: number;

  /** The activity's phases, so a reader can tell the phase at any moment, not only at events. */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => ActivityPhase)
  phases?: ActivityPhase[];

  /** The life script's phase at this point (准备, 进行中, 收尾…). */
  @IsOptional()
  @IsString()
  phase?: string;

  /** Life-line time of this change (a catch-up tick records what happened earlier with the time it happened). */
  @IsOptional()
  @IsString()
  at?: string;

  /** When the next beat is due (ISO, product time); absent when none is left. */
  @IsOptional()
  @IsString()
  nextBeatAt?: string;

  @IsOptional()
  @IsString()
  mood?: string;

  /** The long-term goal this activity serves. */
  @IsOptional()
  @IsString()
  goalId?: string;

  /** `private` activities are told only as "busy with something of my own" in groups that are not `open`. */
  @IsOptional()
  @IsBoolean()
  private?: boolean;

  /** What comes next in the life line, and when (ISO, product time). */
  @IsOptional()
  @IsString()
  nextTitle?: string;

  @IsOptional()
  @IsString()
  nextAt?: string;
}

export const KEYWORD_TERM_STATUSES = ['active', 'pinned', 'suppressed'] as const;
/** `pinned`: never decays, expires or is filtered; `suppressed`: kept so it is never learned again, never hits. */
export type KeywordTermStatus = (typeof KEYWORD_TERM_STATUSES)[number];

export const KEYWORD_TERM_SOURCES = [
  'persona',
  'operator',
  'extracted',
  'jargon',
  'summary',
  'activity',
  'game',
] as const;
/** Where a term came from: persona interests, a person, words of the group, memory's jargon, thread summaries, … */
export type KeywordTermSource = (typeof KEYWORD_TERM_SOURCES)[number];

export const KEYWORD_TERM_CHANGES = [
  'seeded',
  'added',
  'promoted',
  'reinforced',
  'weakened',
  'decayed',
  'expired',
  'evicted',
  'pinned',
  'suppressed',
  'deleted',
] as const;
export type KeywordTermChange = (typeof KEYWORD_TERM_CHANGES)[number];

/** `keyword.term.changed`: the whole term after the change (a snapshot, so the projection is an upsert). */
export class KeywordTermChangedPayload {
  @IsString()
  @MaxLength(64)
  termId!: string;

  @IsIn(KEYWORD_SCOPES)
  scope!: KeywordScope;

  /** The scope's owner: '' for global, the group id, `<group id>/<thread id>`, the persona id, … */
  @IsString()
  @MaxLength(300)
  ownerId!: string;

  @IsIn(KEYWORD_TERM_CHANGES)
  change!: KeywordTermChange;

  /** The canonical term, normalised. */
  @IsString()
  @MaxLength(64)
  text!: string;

  @IsString({ each: true })
  @MaxLength(64, { each: true })
  aliases!: string[];

  @IsNumber()
  @Min(0)
  weight!: number;

  @IsNumber()
  @Min(0)
  confidence!: number;

  @IsIn(KEYWORD_TERM_SOURCES)
  source!: KeywordTermSource;

  @IsIn(KEYWORD_TERM_STATUSES)
  status!: KeywordTermStatus;

  @IsInt()
  @Min(0)
  sightings!: number;

  @IsISO8601()
  firstSeenAt!: string;

  @IsISO8601()
  lastSeenAt!: string;

  @IsOptional()
  @IsISO8601()
  expiresAt?: string;

  /** The set's version this change belongs to. */
  @IsInt()
  @Min(1)
  version!: number;

  /** One line a person understands: "promoted: said 3 times by 2 people", "pinned by operator". */
  @IsString()
  @MaxLength(200)
  reason!: string;
}

/** `keyword.lexicon.versioned`: a set's new version and what it holds now. */
export class KeywordLexiconVersionedPayload {
  @IsIn(KEYWORD_SCOPES)
  scope!: KeywordScope;

  @IsString()
  @MaxLength(300)
  ownerId!: string;

  @IsInt()
  @Min(1)
  version!: number;

  /** Terms that can hit (active and pinned). */
  @IsInt()
  @Min(0)
  terms!: number;

  @IsString({ each: true })
  changedTermIds!: string[];
}

export const KEYWORD_COMMANDS = ['pin', 'suppress', 'delete', 'add'] as const;
export type KeywordCommand = (typeof KEYWORD_COMMANDS)[number];

/** `keyword.control.requested`: a person's command on one term of one set. */
export class KeywordControlRequestedPayload {
  @IsIn(KEYWORD_COMMANDS)
  command!: KeywordCommand;

  @IsIn(KEYWORD_SCOPES)
  scope!: KeywordScope;

  @IsString()
  @MaxLength(300)
  ownerId!: string;

  @IsString()
  @MaxLength(64)
  term!: string;

  @IsOptional()
  @IsString({ each: true })
  @MaxLength(64, { each: true })
  aliases?: string[];

  @IsOptional()
  @IsNumber()
  @Min(0)
  weight?: number;

  /** Who asked (operator name, `panel`, `cli`). */
  @IsString()
  @MaxLength(64)
  requestedBy!: string;
}
