import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { ErrorInfo } from './payloads.js';

/*
 * What the OneBot edge (ingress and outbound, issue 5) records beyond chat messages and sends: notices, requests,
 * send drops and verification outcomes. The bot's own messages reported by the implementation (`message_sent`)
 * travel as `message.echoed` with a `MessagePayload`.
 */

/** `notice.received`: a OneBot notice other than a recall or a poke at the bot (those have their own kinds). */
export class NoticePayload {
  /** OneBot `notice_type` (`group_increase`, `group_ban`, `notify`, `essence`, …). */
  @IsString()
  @MaxLength(64)
  noticeType!: string;

  /** OneBot `sub_type` when present (`approve`, `kick`, `poke`, `set`, …). */
  @IsOptional()
  @IsString()
  @MaxLength(64)
  subType?: string;

  @IsIn(['group', 'private'])
  scope!: 'group' | 'private';

  @IsString()
  selfId!: string;

  /** The member the notice is about (`user_id`). */
  @IsOptional()
  @IsString()
  userId?: string;

  /** Who did it (`operator_id`; 0 is reported as absent). */
  @IsOptional()
  @IsString()
  operatorId?: string;

  /** Whom it was aimed at (`target_id`, a poke's target). */
  @IsOptional()
  @IsString()
  targetId?: string;

  /** The message it is about (`message_id`: essence, emoji reaction). */
  @IsOptional()
  @IsString()
  messageId?: string;

  /** A ban's length in seconds (`duration`, 0 = lifted). */
  @IsOptional()
  @IsInt()
  @Min(0)
  durationSeconds?: number;

  /** Whether the notice concerns the bot's own account (it was banned, made admin, poked …). */
  @IsBoolean()
  aboutSelf!: boolean;

  /** Remaining short scalar fields as reported (`card_new`, `is_add`, `file.name` …), capped. */
  @IsObject()
  details!: Record<string, string>;

  /** OneBot `time` (epoch seconds). */
  @IsInt()
  reportedAt!: number;
}

/** `request.received`: someone asked to befriend the bot, join a group or invited the bot (recorded only). */
export class RequestPayload {
  @IsIn(['friend', 'group'])
  requestType!: 'friend' | 'group';

  /** `add` / `invite` for group requests. */
  @IsOptional()
  @IsString()
  @MaxLength(32)
  subType?: string;

  @IsString()
  selfId!: string;

  /** The asking account (`user_id`; NapCat once reported 0, kept as "0"). */
  @IsString()
  userId!: string;

  @IsString()
  @MaxLength(2000)
  comment!: string;

  /** The implementation's handle for answering the request (`set_*_add_request`). */
  @IsString()
  @MaxLength(500)
  flag!: string;

  @IsInt()
  reportedAt!: number;
}

export const SEND_DROP_REASONS = ['trigger_recalled'] as const;
export type SendDropReason = (typeof SEND_DROP_REASONS)[number];

/** `send.dropped`: outbound let go of a reply (or what was left of it) on purpose, before it went out. */
export class SendDroppedPayload {
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

  @IsIn(SEND_DROP_REASONS)
  reason!: SendDropReason;

  /** Parts already sent before the drop (0 when nothing went out). */
  @IsInt()
  @Min(0)
  partsSent!: number;

  /** Parts the reply had (0 when it was dropped before it was planned). */
  @IsInt()
  @Min(0)
  partsPlanned!: number;

  /** What was not said: the first part left out, or the whole reply when it was dropped before planning. */
  @IsString()
  text!: string;
}

export const VERIFICATION_METHODS = ['group_history', 'friend_history', 'get_msg'] as const;
export type VerificationMethod = (typeof VERIFICATION_METHODS)[number];

/**
 * `send.verified`: an unknown send outcome (NapCat retcode 1200, a timeout after the request left, a connection
 * lost mid-call, a crash mid-send, an `ok` without a message id) was checked against the implementation's recent
 * history. `found` → a `message.sent` follows with the id found; not found → the part is sent again.
 */
export class SendVerifiedPayload {
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

  @IsBoolean()
  found!: boolean;

  @IsIn(VERIFICATION_METHODS)
  method!: VerificationMethod;

  @IsOptional()
  @IsString()
  onebotMessageId?: string;

  /** What made the outcome unknown. */
  @ValidateNested()
  @Type(() => ErrorInfo)
  cause!: ErrorInfo;

  @IsOptional()
  @IsInt()
  retcode?: number;

  /** History messages looked at. */
  @IsInt()
  @Min(0)
  examined!: number;
}

/** Short `[key, value]` pairs for `NoticePayload.details` (helper for producers; keeps the payload small). */
export const NOTICE_DETAIL_LIMITS = { keys: 16, valueChars: 200 } as const;

/** For producers that build a details map: every value a short string, at most 16 keys. */
export function noticeDetails(entries: Iterable<[string, string]>): Record<string, string> {
  const details: Record<string, string> = {};
  let count = 0;
  for (const [key, value] of entries) {
    if (count >= NOTICE_DETAIL_LIMITS.keys) break;
    details[key.slice(0, 64)] = value.slice(0, NOTICE_DETAIL_LIMITS.valueChars);
    count++;
  }
  return details;
}
