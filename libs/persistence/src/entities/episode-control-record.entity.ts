import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EpisodeControlRow } from '../projection/projection.rules.js';

/** `episode_controls`: every command the scheduler sent an episode (start, supersede, interrupt, cancel, resume). */
@Entity({ name: 'episode_controls' })
export class EpisodeControlRecord implements EpisodeControlRow {
  @PrimaryColumn({ name: 'episode_id', type: 'text', primaryKeyConstraintName: 'episode_controls_pkey' })
  episodeId!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'episode_controls_pkey' })
  seq!: number;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ type: 'text', nullable: true })
  command!: string | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ name: 'event_ids', type: 'jsonb', nullable: true })
  eventIds!: string[] | null;

  @Column({ name: 'superseded_by', type: 'text', nullable: true })
  supersededBy!: string | null;

  @Column({ type: 'text', nullable: true })
  cause!: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  at!: Date | null;
}
