import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EventState } from '@app/contracts';
import type { EventTransitionRow } from '../projection/projection.rules.js';

/** `event_transitions`: every state change of every event, forced ones marked. */
@Entity({ name: 'event_transitions' })
export class EventTransitionRecord implements EventTransitionRow {
  @PrimaryColumn({ name: 'event_id', type: 'text', primaryKeyConstraintName: 'event_transitions_pkey' })
  eventId!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'event_transitions_pkey' })
  seq!: number;

  @Column({ name: 'from_state', type: 'text', nullable: true })
  fromState!: EventState | null;

  @Column({ name: 'to_state', type: 'text', nullable: true })
  toState!: EventState | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ type: 'boolean', nullable: true })
  forced!: boolean | null;

  @Column({ type: 'timestamptz', nullable: true })
  at!: Date | null;

  /** Who moved the event (`scheduler`, `operator:<name>`). */
  @Column({ type: 'text', nullable: true })
  actor!: string | null;
}
