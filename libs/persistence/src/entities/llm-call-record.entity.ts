import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { LlmCallRow } from '../projection/projection.rules.js';

/** `llm_calls`: one row per LLM call (retries included), with its tokens: "calls and tokens per …" is one query. */
@Entity({ name: 'llm_calls' })
@Index('llm_calls_episode_idx', ['episodeId'])
@Index('llm_calls_group_at_idx', ['groupId', 'at'])
@Index('llm_calls_role_model_idx', ['role', 'model'])
export class LlmCallRecord implements LlmCallRow {
  @PrimaryColumn({ name: 'call_id', type: 'text', primaryKeyConstraintName: 'llm_calls_pkey' })
  callId!: string;

  @Column({ name: 'event_id', type: 'text', nullable: true })
  eventId!: string | null;

  @Column({ name: 'episode_id', type: 'text', nullable: true })
  episodeId!: string | null;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ type: 'text', nullable: true })
  role!: string | null;

  @Column({ type: 'text', nullable: true })
  model!: string | null;

  @Column({ type: 'text', nullable: true })
  purpose!: string | null;

  @Column({ type: 'text', nullable: true })
  outcome!: string | null;

  @Column({ name: 'tokens_in', type: 'integer', nullable: true })
  tokensIn!: number | null;

  @Column({ name: 'tokens_out', type: 'integer', nullable: true })
  tokensOut!: number | null;

  @Column({ type: 'boolean', nullable: true })
  estimated!: boolean | null;

  @Column({ type: 'integer', nullable: true })
  attempts!: number | null;

  @Column({ name: 'latency_ms', type: 'double precision', nullable: true })
  latencyMs!: number | null;

  @Column({ type: 'integer', nullable: true })
  step!: number | null;

  @Column({ type: 'timestamptz', nullable: true })
  at!: Date | null;
}
