import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { SendRow, SendState } from '../projection/projection.rules.js';

/** `sends`: per action and segment, what outbound was asked to say and what became of it. */
@Entity({ name: 'sends' })
@Index('sends_episode_idx', ['episodeId'])
export class SendRecord implements SendRow {
  @PrimaryColumn({ name: 'action_id', type: 'text', primaryKeyConstraintName: 'sends_pkey' })
  actionId!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'sends_pkey' })
  segment!: number;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'target_type', type: 'text', nullable: true })
  targetType!: string | null;

  @Column({ name: 'target_id', type: 'text', nullable: true })
  targetId!: string | null;

  @Column({ name: 'episode_id', type: 'text', nullable: true })
  episodeId!: string | null;

  @Column({ name: 'trigger_event_id', type: 'text', nullable: true })
  triggerEventId!: string | null;

  @Column({ type: 'text', nullable: true })
  text!: string | null;

  @Column({ type: 'text', nullable: true })
  state!: SendState | null;

  @Column({ name: 'segment_count', type: 'integer', nullable: true })
  segmentCount!: number | null;

  @Column({ name: 'onebot_message_id', type: 'text', nullable: true })
  onebotMessageId!: string | null;

  @Column({ type: 'integer', nullable: true })
  attempts!: number | null;

  @Column({ name: 'error_code', type: 'text', nullable: true })
  errorCode!: string | null;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage!: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  at!: Date | null;

  @Column({ type: 'smallint', nullable: true })
  phase!: number | null;
}
