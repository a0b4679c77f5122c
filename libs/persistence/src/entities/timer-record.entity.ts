import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { TimerRow, TimerState } from '../projection/projection.rules.js';

/** `timers`: every durable timer the scheduler set, and whether it fired or was cancelled. */
@Entity({ name: 'timers' })
export class TimerRecord implements TimerRow {
  @PrimaryColumn({ name: 'timer_id', type: 'text', primaryKeyConstraintName: 'timers_pkey' })
  timerId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ type: 'text', nullable: true })
  purpose!: string | null;

  @Column({ name: 'subject_event_id', type: 'text', nullable: true })
  subjectEventId!: string | null;

  @Column({ name: 'episode_id', type: 'text', nullable: true })
  episodeId!: string | null;

  @Column({ name: 'due_at', type: 'timestamptz', nullable: true })
  dueAt!: Date | null;

  @Column({ name: 'set_at', type: 'timestamptz', nullable: true })
  setAt!: Date | null;

  @Column({ name: 'fired_at', type: 'timestamptz', nullable: true })
  firedAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  state!: TimerState | null;

  @Column({ name: 'cancel_reason', type: 'text', nullable: true })
  cancelReason!: string | null;

  @Column({ type: 'smallint', nullable: true })
  phase!: number | null;
}
