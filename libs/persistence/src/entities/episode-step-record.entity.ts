import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EpisodeStepRow } from '../projection/projection.rules.js';

/** `episode_steps`: each Thought / Action / Observation of an episode, with its cost. */
@Entity({ name: 'episode_steps' })
export class EpisodeStepRecord implements EpisodeStepRow {
  @PrimaryColumn({ name: 'episode_id', type: 'text', primaryKeyConstraintName: 'episode_steps_pkey' })
  episodeId!: string;

  /** 0-based step index. */
  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'episode_steps_pkey' })
  idx!: number;

  @Column({ type: 'text', nullable: true })
  thought!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  action!: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  observation!: Record<string, unknown> | null;

  @Column({ name: 'tokens_in', type: 'integer', nullable: true })
  tokensIn!: number | null;

  @Column({ name: 'tokens_out', type: 'integer', nullable: true })
  tokensOut!: number | null;

  @Column({ name: 'latency_ms', type: 'double precision', nullable: true })
  latencyMs!: number | null;

  @Column({ type: 'timestamptz', nullable: true })
  at!: Date | null;

  @Column({ type: 'text', nullable: true })
  model!: string | null;

  @Column({ name: 'llm_calls', type: 'integer', nullable: true })
  llmCalls!: number | null;
}
