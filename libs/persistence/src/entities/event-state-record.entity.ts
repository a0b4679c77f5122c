import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EventState } from '@app/contracts';
import type { EventStateRow } from '../projection/projection.rules.js';

/** `events`: where each event stands in the event state machine, and the decision taken about it. */
@Entity({ name: 'events' })
export class EventStateRecord implements EventStateRow {
  /** The subject event's id. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'events_pkey' })
  id!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ type: 'text', nullable: true })
  kind!: string | null;

  @Column({ type: 'text', nullable: true })
  state!: EventState | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ type: 'text', nullable: true })
  outcome!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  features!: Record<string, number> | null;

  @Column({ name: 'episode_id', type: 'text', nullable: true })
  episodeId!: string | null;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;

  @Column({ name: 'transition_seq', type: 'integer', nullable: true })
  transitionSeq!: number | null;
}
