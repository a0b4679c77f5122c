import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsISO8601,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';

/*
 * Facts of the scheduler's attention (issue 7): threads as they form, go quiet and end, and the group actor's
 * reply budget. They are in the log so the `threads` and `group_actors` read models rebuild on replay.
 */

/** A question someone asked in a thread that nobody has answered yet. */
export class ThreadOpenQuestion {
  @IsString()
  @MaxLength(128)
  eventId!: string;

  @IsString()
  @MaxLength(64)
  senderId!: string;

  @IsISO8601()
  askedAt!: string;

  @IsString()
  @MaxLength(120)
  text!: string;
}

/** `thread.updated`: a thread after a message joined it, the bot replied in it or a question in it was answered. */
export class ThreadUpdatedPayload {
  @IsString()
  @MaxLength(128)
  threadId!: string;

  /** Grows with every change of the thread; the read model keeps the newest. */
  @IsInt()
  @Min(1)
  version!: number;

  @IsISO8601()
  startedAt!: string;

  @IsISO8601()
  lastActivityAt!: string;

  /** User ids in the order they joined (`self` is the bot), capped. */
  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(32)
  participants!: string[];

  @IsInt()
  @Min(0)
  messages!: number;

  @IsBoolean()
  botJoined!: boolean;

  @IsOptional()
  @IsISO8601()
  lastBotReplyAt?: string;

  @ValidateNested({ each: true })
  @Type(() => ThreadOpenQuestion)
  @ArrayMaxSize(8)
  openQuestions!: ThreadOpenQuestion[];

  /** The event that changed it, when one did. */
  @IsOptional()
  @IsString()
  subjectEventId?: string;

  /** Why the subject joined this thread: `new`, `reply`, `at`, `speaker`, `overlap`, `flow`, `bot`, `explicit`. */
  @IsString()
  @MaxLength(32)
  link!: string;
}

/** `thread.idle`: nothing was said in a thread for the idle gap; it leaves the group's live threads. */
export class ThreadIdlePayload extends ThreadUpdatedPayload {
  @IsISO8601()
  idleAt!: string;
}

/** `group.actor.updated`: the group actor (ADR-0001 §6) after the bot replied or an episode began or ended. */
export class GroupActorUpdatedPayload {
  @IsInt()
  @Min(1)
  version!: number;

  @IsOptional()
  @IsISO8601()
  lastBotReplyAt?: string;

  @IsOptional()
  @IsString()
  lastPartnerId?: string;

  /** Replies (and ambient episodes in flight) inside the budget window. */
  @IsInt()
  @Min(0)
  repliesInWindow!: number;

  @IsInt()
  @Min(0)
  budget!: number;

  @IsOptional()
  @IsISO8601()
  cooldownUntil?: string;

  @IsArray()
  @IsString({ each: true })
  @ArrayMaxSize(32)
  activeThreads!: string[];

  @IsInt()
  @Min(0)
  activeEvents!: number;

  @IsString()
  @MaxLength(200)
  reason!: string;
}
