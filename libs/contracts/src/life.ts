import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsISO8601,
  IsObject,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';

/*
 * The bot's agenda (ADR-0001 §10): long-term goals, milestones, mood and how much each group is told. Written only
 * by the life director from the authored life script (`personas/life/*.yaml`), never by a chat model.
 */

/** How much of the life line a group is told: everything, the gist, or only that the bot is busy. */
export const DISCLOSURE_LEVELS = ['open', 'vague', 'private'] as const;
export type DisclosureLevel = (typeof DISCLOSURE_LEVELS)[number];

export class LongTermGoal {
  @IsString()
  @MaxLength(64)
  id!: string;

  @IsString()
  @MaxLength(100)
  title!: string;

  @IsString()
  @MaxLength(500)
  description!: string;
}

export class AgendaMilestone {
  @IsString()
  @MaxLength(64)
  id!: string;

  @IsString()
  @MaxLength(64)
  goalId!: string;

  @IsString()
  @MaxLength(200)
  title!: string;

  /** Reached when this many activities serving the goal have completed. */
  @IsInt()
  @Min(1)
  afterSessions!: number;
}

/** `personal.agenda.loaded`: the life director (re)loaded the life script; its version is a content hash. */
export class PersonalAgendaLoadedPayload {
  @IsString()
  @MaxLength(64)
  personaId!: string;

  @IsString()
  @MaxLength(64)
  scriptVersion!: string;

  @IsString()
  @MaxLength(200)
  mood!: string;

  /** IANA time zone the life line is lived in (times in prompts are shown in it). */
  @IsString()
  @MaxLength(64)
  timezone!: string;

  @IsArray()
  @ArrayMaxSize(32)
  @ValidateNested({ each: true })
  @Type(() => LongTermGoal)
  longTermGoals!: LongTermGoal[];

  @IsArray()
  @ArrayMaxSize(64)
  @ValidateNested({ each: true })
  @Type(() => AgendaMilestone)
  milestones!: AgendaMilestone[];

  @IsIn(DISCLOSURE_LEVELS)
  defaultDisclosure!: DisclosureLevel;

  /** Group id → disclosure level, for groups told more or less than the default. */
  @IsObject()
  groupDisclosure!: Record<string, DisclosureLevel>;
}

/** `personal.activity.detailed`: a utils-model detail for an activity, validated before it was recorded. */
export class PersonalActivityDetailedPayload {
  @IsString()
  activityId!: string;

  @IsString()
  @MaxLength(120)
  detail!: string;
}

/** `personal.milestone.reached`: enough activities served a goal. */
export class PersonalMilestoneReachedPayload {
  @IsString()
  @MaxLength(64)
  milestoneId!: string;

  @IsString()
  @MaxLength(64)
  goalId!: string;

  @IsString()
  @MaxLength(200)
  title!: string;

  @IsString()
  activityId!: string;

  @IsISO8601()
  at!: string;
}
