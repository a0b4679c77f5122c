import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { EpisodeRow, EpisodeState } from '../projection/projection.rules.js';

/** `episodes`: one row per reasoning episode, from start to outcome. */
@Entity({ name: 'episodes' })
@Index('episodes_trigger_event_idx', ['triggerEventId'])
@Index('episodes_group_started_idx', ['groupId', 'startedAt'])
export class EpisodeRecord implements EpisodeRow {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'episodes_pkey' })
  id!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'trigger_event_id', type: 'text', nullable: true })
  triggerEventId!: string | null;

  @Column({ type: 'text', nullable: true })
  state!: EpisodeState | null;

  @Column({ type: 'text', nullable: true })
  outcome!: string | null;

  @Column({ type: 'text', nullable: true })
  model!: string | null;

  @Column({ type: 'integer', nullable: true })
  attempt!: number | null;

  @Column({ name: 'max_steps', type: 'integer', nullable: true })
  maxSteps!: number | null;

  @Column({ type: 'timestamptz', nullable: true })
  deadline!: Date | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  @Column({ type: 'integer', nullable: true })
  steps!: number | null;

  @Column({ name: 'tokens_in', type: 'integer', nullable: true })
  tokensIn!: number | null;

  @Column({ name: 'tokens_out', type: 'integer', nullable: true })
  tokensOut!: number | null;

  @Column({ name: 'duration_ms', type: 'double precision', nullable: true })
  durationMs!: number | null;

  @Column({ name: 'error_code', type: 'text', nullable: true })
  errorCode!: string | null;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage!: string | null;

  @Column({ type: 'smallint', nullable: true })
  phase!: number | null;

  @Column({ name: 'ended_by', type: 'text', nullable: true })
  endedBy!: string | null;

  @Column({ name: 'end_reason', type: 'text', nullable: true })
  endReason!: string | null;

  @Column({ name: 'llm_calls', type: 'integer', nullable: true })
  llmCalls!: number | null;

  @Column({ name: 'persona_version', type: 'text', nullable: true })
  personaVersion!: string | null;

  @Column({ name: 'planner_model', type: 'text', nullable: true })
  plannerModel!: string | null;

  @Column({ name: 'token_budget', type: 'integer', nullable: true })
  tokenBudget!: number | null;

  @Column({ name: 'waiting_cause', type: 'text', nullable: true })
  waitingCause!: string | null;

  @Column({ name: 'resume_at', type: 'timestamptz', nullable: true })
  resumeAt!: Date | null;
}
