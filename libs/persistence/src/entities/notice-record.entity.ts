import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { NoticeRow } from '../projection/projection.rules.js';

/** `notices`: what happened around the messages (joins, leaves, bans, cards, pokes not at the bot, recalls …). */
@Entity({ name: 'notices' })
@Index('notices_group_reported_idx', ['groupId', 'reportedAt'])
export class NoticeRecord implements NoticeRow {
  @PrimaryColumn({ name: 'event_id', type: 'text', primaryKeyConstraintName: 'notices_pkey' })
  eventId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'notice_type', type: 'text', nullable: true })
  noticeType!: string | null;

  @Column({ name: 'sub_type', type: 'text', nullable: true })
  subType!: string | null;

  @Column({ name: 'user_id', type: 'text', nullable: true })
  userId!: string | null;

  @Column({ name: 'operator_id', type: 'text', nullable: true })
  operatorId!: string | null;

  @Column({ name: 'target_id', type: 'text', nullable: true })
  targetId!: string | null;

  @Column({ name: 'message_id', type: 'text', nullable: true })
  messageId!: string | null;

  @Column({ name: 'duration_seconds', type: 'integer', nullable: true })
  durationSeconds!: number | null;

  @Column({ name: 'about_self', type: 'boolean', nullable: true })
  aboutSelf!: boolean | null;

  @Column({ type: 'jsonb', nullable: true })
  details!: Record<string, string> | null;

  @Column({ name: 'reported_at', type: 'timestamptz', nullable: true })
  reportedAt!: Date | null;
}
