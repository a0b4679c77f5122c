import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
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
