import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { MessageSegment } from '@app/contracts';
import type { MessageRow } from '../projection/projection.rules.js';

/** `messages`: what was said in each group, by people and by the bot. */
@Entity({ name: 'messages' })
@Index('messages_group_sent_idx', ['groupId', 'sentAt'])
@Index('messages_group_message_idx', ['groupId', 'messageId'])
export class MessageRecord implements MessageRow {
  @PrimaryColumn({ name: 'event_id', type: 'text', primaryKeyConstraintName: 'messages_pkey' })
  eventId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'message_id', type: 'text', nullable: true })
  messageId!: string | null;

  @Column({ name: 'user_id', type: 'text', nullable: true })
  userId!: string | null;

  @Column({ name: 'display_name', type: 'text', nullable: true })
  displayName!: string | null;

  @Column({ type: 'text', nullable: true })
  text!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  segments!: MessageSegment[] | null;

  @Column({ type: 'boolean', nullable: true })
  direct!: boolean | null;

  @Column({ name: 'direct_reason', type: 'text', nullable: true })
  directReason!: string | null;

  @Column({ name: 'from_self', type: 'boolean', nullable: true })
  fromSelf!: boolean | null;

  @Column({ name: 'sent_at', type: 'timestamptz', nullable: true })
  sentAt!: Date | null;

  /** When the message was withdrawn (`message.recalled`), if it was. */
  @Column({ name: 'recalled_at', type: 'timestamptz', nullable: true })
  recalledAt!: Date | null;
}
