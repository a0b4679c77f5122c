import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
} from 'class-validator';

/*
 * Memory facts (ADR-0001 §11). Event memory is the log itself; these are the layers built on it, each written by
 * the memory workers as events so the read models can be rebuilt by replay. The envelope's `groupId` is the group
 * the memory belongs to and `evidenceMessageIds` the message events it rests on.
 */

export const SUMMARY_REASONS = ['every_n', 'idle'] as const;
export type SummaryReason = (typeof SUMMARY_REASONS)[number];

/** `memory.summary.written`: a thread's running summary after `throughOrdinal` messages. */
export class MemorySummaryWrittenPayload {
  @IsString()
  @MaxLength(64)
  summaryId!: string;

  @IsString()
  @MaxLength(200)
  threadId!: string;

  @IsIn(SUMMARY_REASONS)
  reason!: SummaryReason;

  @IsString()
  @MaxLength(2000)
  summary!: string;

  /** The thread's message ordinal this summary covers up to (1-based, inclusive). */
  @IsInt()
  @Min(1)
  throughOrdinal!: number;

  @IsInt()
  @Min(1)
  messageCount!: number;

  /** People (never the bot) whose messages the summary covers. */
  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(256)
  participantIds!: string[];

  /** Product time of the newest message covered. */
  @IsString()
  lastMessageAt!: string;
}

/**
 * Kinds of social facts. `profile` facts are single-valued per key (a new value for 专业 conflicts with the old);
 * the others may hold several values per key.
 */
export const FACT_CATEGORIES = ['profile', 'preference', 'relationship', 'promise', 'event'] as const;
export type FactCategory = (typeof FACT_CATEGORIES)[number];

export const FACT_STATUSES = ['active', 'disputed', 'superseded'] as const;
export type FactStatus = (typeof FACT_STATUSES)[number];

/** `memory.fact.learned`: a fact about a person was learned, reinforced, disputed or replaced a conflicting one. */
export class MemoryFactLearnedPayload {
  /** Deterministic per (group, subject, key, normalised value): the same fact learned twice is one fact. */
  @IsString()
  @MaxLength(64)
  factId!: string;

  @IsString()
  @MaxLength(32)
  subjectUserId!: string;

  /** The subject's display name when learned (for people reading the panel). */
  @IsString()
  @MaxLength(64)
  subjectName!: string;

  @IsIn(FACT_CATEGORIES)
  category!: FactCategory;

  /** What the fact is about, short (专业, 喜欢的食物, 室友). */
  @IsString()
  @MaxLength(32)
  key!: string;

  @IsString()
  @MaxLength(200)
  value!: string;

  /** The other person of a relationship fact. */
  @IsOptional()
  @IsString()
  @MaxLength(32)
  relatedUserId?: string;

  @IsNumber()
  @Min(0)
  @Max(1)
  confidence!: number;

  @IsIn(FACT_STATUSES)
  status!: FactStatus;

  /** 1 when first learned, +1 each time it is seen again; orders the versions of one fact. */
  @IsInt()
  @Min(1)
  revision!: number;

  @IsInt()
  @Min(1)
  sightings!: number;

  /** The conflicting fact this one replaced (that fact becomes `superseded`). */
  @IsOptional()
  @IsString()
  @MaxLength(64)
  replacesFactId?: string;

  /** Product time it was (last) learned. */
  @IsString()
  learnedAt!: string;
}

export const JARGON_STATUSES = ['learned', 'rejected'] as const;
export type JargonStatus = (typeof JARGON_STATUSES)[number];

/** `memory.jargon.learned`: a group's word was looked at after enough sightings; `rejected`: it is ordinary. */
export class MemoryJargonLearnedPayload {
  @IsString()
  @MaxLength(32)
  term!: string;

  @IsIn(JARGON_STATUSES)
  status!: JargonStatus;

  @IsString()
  @MaxLength(200)
  meaning!: string;

  @IsInt()
  @Min(1)
  sightings!: number;

  @IsInt()
  @Min(1)
  users!: number;
}
