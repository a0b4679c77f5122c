import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { KeywordHitRow, KeywordSetRow, KeywordTermRow } from '../projection/keyword.rows.js';

/** `keyword_sets`: each keyword set (scope + owner) at its newest version. */
@Entity({ name: 'keyword_sets' })
export class KeywordSetRecord implements KeywordSetRow {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'keyword_sets_pkey' })
  scope!: string;

  @PrimaryColumn({ name: 'owner_id', type: 'text', primaryKeyConstraintName: 'keyword_sets_pkey' })
  ownerId!: string;

  @Column({ type: 'integer', nullable: true })
  version!: number | null;

  @Column({ type: 'integer', nullable: true })
  terms!: number | null;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;
}

/** `keyword_terms`: every term a set held, with its weight, status and the change and reason that left it so. */
@Entity({ name: 'keyword_terms' })
@Index('keyword_terms_set_idx', ['scope', 'ownerId', 'status'])
export class KeywordTermRecord implements KeywordTermRow {
  @PrimaryColumn({ name: 'term_id', type: 'text', primaryKeyConstraintName: 'keyword_terms_pkey' })
  termId!: string;

  @Column({ type: 'text', nullable: true })
  scope!: string | null;

  @Column({ name: 'owner_id', type: 'text', nullable: true })
  ownerId!: string | null;

  @Column({ type: 'text', nullable: true })
  text!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  aliases!: string[] | null;

  @Column({ type: 'double precision', nullable: true })
  weight!: number | null;

  @Column({ type: 'double precision', nullable: true })
  confidence!: number | null;

  @Column({ type: 'text', nullable: true })
  source!: string | null;

  @Column({ type: 'text', nullable: true })
  status!: string | null;

  @Column({ type: 'integer', nullable: true })
  sightings!: number | null;

  @Column({ name: 'first_seen_at', type: 'timestamptz', nullable: true })
  firstSeenAt!: Date | null;

  @Column({ name: 'last_seen_at', type: 'timestamptz', nullable: true })
  lastSeenAt!: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'last_change', type: 'text', nullable: true })
  lastChange!: string | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ name: 'changed_at', type: 'timestamptz', nullable: true })
  changedAt!: Date | null;

  @Column({ type: 'integer', nullable: true })
  version!: number | null;
}

/** `keyword_hits`: which terms hit which event, as the decision about it recorded them. */
@Entity({ name: 'keyword_hits' })
@Index('keyword_hits_term_idx', ['termId', 'matchedAt'])
export class KeywordHitRecord implements KeywordHitRow {
  @PrimaryColumn({ name: 'event_id', type: 'text', primaryKeyConstraintName: 'keyword_hits_pkey' })
  eventId!: string;

  @PrimaryColumn({ name: 'term_id', type: 'text', primaryKeyConstraintName: 'keyword_hits_pkey' })
  termId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'thread_id', type: 'text', nullable: true })
  threadId!: string | null;

  @Column({ type: 'text', nullable: true })
  term!: string | null;

  @Column({ type: 'text', nullable: true })
  scope!: string | null;

  @Column({ type: 'double precision', nullable: true })
  weight!: number | null;

  @Column({ type: 'text', nullable: true })
  outcome!: string | null;

  @Column({ name: 'matched_at', type: 'timestamptz', nullable: true })
  matchedAt!: Date | null;
}
