import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';

/** One OneBot v11 message segment, normalised: every data value is a string (ids, sizes, sub types). */
export class MessageSegment {
  @IsString()
  @MaxLength(64)
  type!: string;

  @IsObject()
  data!: Record<string, string>;
}

export const SENDER_ROLES = ['owner', 'admin', 'member', 'unknown'] as const;
export type SenderRole = (typeof SENDER_ROLES)[number];

export class MessageSender {
  @IsString()
  userId!: string;

  @IsString()
  nickname!: string;

  @IsString()
  card!: string;

  /** What people in the group see: the group card when set, else the nickname, else the QQ number. */
  @IsString()
  displayName!: string;

  @IsIn(SENDER_ROLES)
  role!: SenderRole;
}

/** Why a message counts as addressed to the bot. `poke`: a poke (戳一戳) at the bot, carried as a message. */
export const DIRECT_REASONS = ['at', 'reply', 'name', 'private', 'poke'] as const;
export type DirectReason = (typeof DIRECT_REASONS)[number];

/** The payload of `message.observed` and `message.direct`: one chat message as the runtime understands it. */
export class MessagePayload {
  @IsIn(['group', 'private'])
  messageType!: 'group' | 'private';

  /** The bot account that saw it (OneBot `self_id`). */
  @IsString()
  selfId!: string;

  /** OneBot `message_id` as a string (NapCat sends a signed int32). */
  @IsString()
  messageId!: string;

  @IsOptional()
  @IsString()
  groupName?: string;

  @ValidateNested()
  @Type(() => MessageSender)
  sender!: MessageSender;

  @ValidateNested({ each: true })
  @Type(() => MessageSegment)
  segments!: MessageSegment[];

  /** Plain-text rendering for people and prompts: `@name`, `[图片]`, `[表情]`… */
  @IsString()
  text!: string;

  /** True when `text` was cut to the configured maximum; the segments are kept whole. */
  @IsBoolean()
  truncated!: boolean;

  @IsBoolean()
  mentionsSelf!: boolean;

  /** The message id this one quotes, when it carries a reply segment. */
  @IsOptional()
  @IsString()
  replyToMessageId?: string;

  /** Set on `message.direct`: why the message counts as addressed to the bot. */
  @IsOptional()
  @IsIn(DIRECT_REASONS)
  directReason?: DirectReason;

  /** OneBot `time` (epoch seconds) as reported by the implementation. */
  @IsInt()
  sentAt!: number;
}

/** A message as it appears in a prompt's context window. */
export interface ContextMessage {
  eventId: string;
  messageId: string;
  userId: string;
  displayName: string;
  text: string;
  sentAt: number;
  fromSelf: boolean;
}
