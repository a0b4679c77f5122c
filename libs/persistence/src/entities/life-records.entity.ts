import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { ActivityRow, ActivityStatus, AgendaMilestoneRow, AgendaRow, BeatRow } from '../projection/life.rows.js';

/** `agenda`: the bot's long-term goals, milestones, base mood and disclosure per group, from the life script. */
@Entity({ name: 'agenda' })
export class AgendaRecord implements AgendaRow {
  @PrimaryColumn({ name: 'persona_id', type: 'text', primaryKeyConstraintName: 'agenda_pkey' })
  personaId!: string;

  @Column({ name: 'script_version', type: 'text', nullable: true })
  scriptVersion!: string | null;

  @Column({ type: 'text', nullable: true })
  mood!: string | null;

  @Column({ type: 'text', nullable: true })
  timezone!: string | null;

  @Column({ name: 'long_term_goals', type: 'jsonb', nullable: true })
  longTermGoals!: Record<string, unknown>[] | null;

  @Column({ type: 'jsonb', nullable: true })
  milestones!: Record<string, unknown>[] | null;

  @Column({ name: 'default_disclosure', type: 'text', nullable: true })
  defaultDisclosure!: string | null;

  @Column({ name: 'group_disclosure', type: 'jsonb', nullable: true })
  groupDisclosure!: Record<string, string> | null;

  @Column({ name: 'loaded_at', type: 'timestamptz', nullable: true })
  loadedAt!: Date | null;
}

/** `activities`: every activity of the life line, current and past. */
@Entity({ name: 'activities' })
@Index('activities_started_idx', ['startedAt'])
export class ActivityRecord implements ActivityRow {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'activities_pkey' })
  id!: string;

  @Column({ type: 'text', nullable: true })
  title!: string | null;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'expected_duration_minutes', type: 'integer', nullable: true })
  expectedDurationMinutes!: number | null;

  @Column({ name: 'goal_id', type: 'text', nullable: true })
  goalId!: string | null;

  @Column({ type: 'boolean', nullable: true })
  private!: boolean | null;

  @Column({ type: 'jsonb', nullable: true })
  phases!: { name: string; until: number }[] | null;

  @Column({ type: 'text', nullable: true })
  detail!: string | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  status!: ActivityStatus | null;

  @Column({ type: 'text', nullable: true })
  phase!: string | null;

  @Column({ type: 'double precision', nullable: true })
  progress!: number | null;

  @Column({ name: 'next_beat_at', type: 'timestamptz', nullable: true })
  nextBeatAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  mood!: string | null;

  @Column({ name: 'next_title', type: 'text', nullable: true })
  nextTitle!: string | null;

  @Column({ name: 'next_at', type: 'timestamptz', nullable: true })
  nextAt!: Date | null;

  /** Version of the live columns: 0 started, beat index + 1, 10000 completed. */
  @Column({ type: 'integer', nullable: true })
  version!: number | null;
}

/** `beats`: the small things that happened during an activity, in order. */
@Entity({ name: 'beats' })
@Index('beats_at_idx', ['at'])
export class BeatRecord implements BeatRow {
  @PrimaryColumn({ name: 'activity_id', type: 'text', primaryKeyConstraintName: 'beats_pkey' })
  activityId!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'beats_pkey' })
  idx!: number;

  @Column({ type: 'text', nullable: true })
  text!: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  at!: Date | null;

  @Column({ type: 'double precision', nullable: true })
  progress!: number | null;
}

/** `agenda_milestones`: milestones of long-term goals, once reached. */
@Entity({ name: 'agenda_milestones' })
export class AgendaMilestoneRecord implements AgendaMilestoneRow {
  @PrimaryColumn({ name: 'milestone_id', type: 'text', primaryKeyConstraintName: 'agenda_milestones_pkey' })
  milestoneId!: string;

  @Column({ name: 'goal_id', type: 'text', nullable: true })
  goalId!: string | null;

  @Column({ type: 'text', nullable: true })
  title!: string | null;

  @Column({ name: 'activity_id', type: 'text', nullable: true })
  activityId!: string | null;

  @Column({ name: 'reached_at', type: 'timestamptz', nullable: true })
  reachedAt!: Date | null;
}
