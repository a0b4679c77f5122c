import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `projection_checkpoints`: how far each projector has durably applied each partition stream. The stream
 * trimmer never removes entries past `lastEntryId`.
 */
@Entity({ name: 'projection_checkpoints' })
export class ProjectionCheckpoint {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'projection_checkpoints_pkey' })
  projector!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'projection_checkpoints_pkey' })
  partition!: number;

  /** The newest stream entry applied (Redis stream ids order as `ms-seq` pairs, never as text). */
  @Column({ name: 'last_entry_id', type: 'text' })
  lastEntryId!: string;

  @Column({ name: 'last_event_id', type: 'text' })
  lastEventId!: string;

  /** Events archived through this checkpoint (bigint, read as a string). */
  @Column({ name: 'events_applied', type: 'bigint', default: 0 })
  eventsApplied!: string;

  /** Creation time of the newest event applied: a log time, so a redelivered batch changes nothing. */
  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
