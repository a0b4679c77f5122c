import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';

/** Who the bot is. The name is what people call it; aliases are the other names it answers to. */
export class PersonaIdentity {
  @IsString()
  @IsNotEmpty()
  @MaxLength(32)
  name!: string;

  @IsArray()
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  @ArrayMaxSize(16)
  aliases!: string[];

  @IsString()
  @IsNotEmpty()
  @MaxLength(2000)
  description!: string;
}

export const CLOCK_TIME = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;

/** `HH:MM` → minutes since midnight. */
export function minutesOfDay(at: string): number {
  const match = CLOCK_TIME.exec(at);
  if (!match) throw new RangeError(`not a time of day: ${at}`);
  return Number(match[1]) * 60 + Number(match[2]);
}

/** One entry of the daily routine the life director follows (ADR §10). */
export class RoutineActivity {
  /** Local start time, `HH:MM` in the persona's time zone. */
  @Matches(CLOCK_TIME, { message: 'must be a time of day as HH:MM (00:00–23:59)' })
  at!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  title!: string;

  @IsString()
  @MaxLength(1000)
  description!: string;

  /** May run past midnight (a night's sleep); a whole routine fits in one day. */
  @IsInt()
  @Min(1)
  @Max(1440)
  durationMinutes!: number;

  /** Small things that happen on the way, told at the activity's milestones (half-way first). */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(8)
  beats?: string[];
}

/**
 * Explicit attention settings (issue 7, ADR-0018). Every field is optional: what is left out follows from the
 * persona's numbers (`attentionProfile`). Weights are 0–1 contributions to the attention score; thresholds are
 * score cut-offs; times are product time.
 */
export class AttentionWeights {
  @IsOptional() @IsNumber() @Min(0) @Max(1) interest?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) question?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) continuity?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) obligation?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) keyword?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) silence?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) novelty?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) recentlyReplied?: number;
  @IsOptional() @IsNumber() @Min(0) @Max(1) budgetSpent?: number;
}

export class PersonaAttention {
  /** The bot joins in unasked only at or above this score. */
  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  high?: number;

  /** Between `middle` and `high` it waits and looks again (snooze). Must not exceed `high`. */
  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  middle?: number;

  @IsOptional()
  @ValidateNested()
  @Type(() => AttentionWeights)
  weights?: AttentionWeights;

  /** Maisaka's talk_value (0–1); default participationBias. */
  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  talkValue?: number;

  /** Maisaka's talk-frequency multiplier; 0 silences unasked replies. */
  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(10)
  talkAdjust?: number;

  /** Replies per budget window. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  budget?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1440)
  windowMinutes?: number;

  /** After a reply, other conversations wait this long before the bot speaks up unasked. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(86400)
  cooldownSeconds?: number;

  /** How long a middle-score message waits before it is looked at again. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3600)
  snoozeSeconds?: number;

  /** Speak only when called (@, quote, name, private, poke): nothing ambient is ever deliberated. */
  @IsOptional()
  @IsBoolean()
  onlyWhenCalled?: boolean;
}

/**
 * What a group may change about the persona: tone and appetite, never facts. One bot identity has one life line
 * (ADR §10), so the routine and identity are shared by every group.
 */
export class PersonaGroupOverride {
  @IsOptional()
  @IsString()
  @MaxLength(200)
  mood?: string;

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  values?: string[];

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  interests?: string[];

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  participationBias?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  curiosity?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  sociability?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  patience?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  toolBias?: number;

  @IsOptional()
  @IsString()
  @MaxLength(1000)
  speakingStyle?: string;

  /** What this group is to the persona ("高中同学群，大家很熟"), shown with the group in prompts. */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  notes?: string;

  /** Attention settings of this group, merged key by key over the persona's `attention`. */
  @IsOptional()
  @ValidateNested()
  @Type(() => PersonaAttention)
  attention?: PersonaAttention;
}

/**
 * The persona as a decision policy (ADR §9), read-only to the LLM. Besides tone, its numbers shape attention:
 * how readily the bot joins in, how long it waits, whether it reaches for tools.
 */
export class PersonaPolicy {
  @IsDefined()
  @ValidateNested()
  @Type(() => PersonaIdentity)
  identity!: PersonaIdentity;

  @IsArray()
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  values!: string[];

  /** The baseline mood; the life director may colour it over the day. */
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  mood!: string;

  @IsArray()
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  interests!: string[];

  /** 0–1: how readily the bot speaks up unasked. */
  @IsNumber()
  @Min(0)
  @Max(1)
  participationBias!: number;

  @IsNumber()
  @Min(0)
  @Max(1)
  curiosity!: number;

  @IsNumber()
  @Min(0)
  @Max(1)
  sociability!: number;

  /** 0–1: how long the bot is willing to wait before answering (higher waits longer). */
  @IsNumber()
  @Min(0)
  @Max(1)
  patience!: number;

  /** 0–1: how readily the bot uses tools rather than answering from what it knows. */
  @IsNumber()
  @Min(0)
  @Max(1)
  toolBias!: number;

  @IsString()
  @IsNotEmpty()
  @MaxLength(1000)
  speakingStyle!: string;

  /** Explicit attention settings; what is left out follows from the numbers above (`attentionProfile`). */
  @IsOptional()
  @ValidateNested()
  @Type(() => PersonaAttention)
  attention?: PersonaAttention;

  /** Group id → what differs in that group. Checked entry by entry by `loadPersona`. */
  @IsOptional()
  @IsObject()
  groupOverrides: Record<string, PersonaGroupOverride> = {};

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => RoutineActivity)
  routine!: RoutineActivity[];

  /** IANA time zone the persona lives in: routine times and message clocks are read in it. */
  @IsString()
  timezone = 'Asia/Shanghai';
}

/** The persona as seen from one group: overrides applied, with the group's note when it has one. */
export type EffectivePersona = Omit<PersonaPolicy, 'groupOverrides'> & { groupNotes?: string };
