import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { EventEnvelope } from '@app/contracts';

/**
 * `event_log`: the durable, append-only archive of every event, in the order the projector applied them. Redis
 * streams are the hot log and get trimmed; this table is what replay rebuilds the read models from.
 */
@Entity({ name: 'event_log' })
@Index('event_log_id_key', ['id'], { unique: true })
export class EventLogEntry {
  /** Global apply order (bigint, read as a string). */
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'event_log_pkey' })
  seq!: string;

  @Column({ type: 'text' })
  id!: string;

  @Column({ type: 'integer' })
  partition!: number;

  /** The Redis stream entry id the event was read from. */
  @Column({ name: 'entry_id', type: 'text' })
  entryId!: string;

  @Column({ type: 'text' })
  kind!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ type: 'jsonb' })
  envelope!: EventEnvelope;

  /** When the projector archived it: the one column that is not a function of the events. */
  @Column({ name: 'archived_at', type: 'timestamptz', default: () => 'now()' })
  archivedAt!: Date;
}
