import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { FactRow, JargonRow, MemoryMessageRow, SummaryRow } from '../projection/memory.rows.js';

/** `memory_messages`: event memory, searchable: every chat message with its search terms (jieba-segmented). */
@Entity({ name: 'memory_messages' })
@Index('memory_messages_group_sent_idx', ['groupId', 'sentAt'])
// A full-text GIN index and an index with INCLUDE TypeORM cannot describe: made by the migrations only.
@Index('memory_messages_vector_idx', { synchronize: false })
@Index('memory_messages_group_user_idx', { synchronize: false })
export class MemoryMessageRecord implements MemoryMessageRow {
  @PrimaryColumn({ name: 'event_id', type: 'text', primaryKeyConstraintName: 'memory_messages_pkey' })
  eventId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'thread_id', type: 'text', nullable: true })
  threadId!: string | null;

  @Column({ name: 'user_id', type: 'text', nullable: true })
  userId!: string | null;

  @Column({ name: 'display_name', type: 'text', nullable: true })
  displayName!: string | null;

  @Column({ name: 'from_self', type: 'boolean', nullable: true })
  fromSelf!: boolean | null;

  @Column({ name: 'sent_at', type: 'timestamptz', nullable: true })
  sentAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  text!: string | null;

  /** Space-separated search terms; searched through `searchVector`. */
  @Column({ type: 'text', nullable: true })
  terms!: string | null;

  /**
   * `to_tsvector('simple', terms)`, kept by a trigger on insert and on every change of `terms` (ADR-0049): never
   * written or read through the entity, only searched in SQL.
   */
  @Column({ name: 'search_vector', type: 'tsvector', nullable: true, select: false, insert: false, update: false })
  searchVector?: never;
}

/** `memory_summaries`: running summaries of threads. */
@Entity({ name: 'memory_summaries' })
@Index('memory_summaries_thread_idx', ['groupId', 'threadId', 'throughOrdinal'])
@Index('memory_summaries_terms_idx', { synchronize: false })
export class SummaryRecord implements SummaryRow {
  @PrimaryColumn({ name: 'summary_id', type: 'text', primaryKeyConstraintName: 'memory_summaries_pkey' })
  summaryId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'thread_id', type: 'text', nullable: true })
  threadId!: string | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ type: 'text', nullable: true })
  summary!: string | null;

  @Column({ name: 'through_ordinal', type: 'integer', nullable: true })
  throughOrdinal!: number | null;

  @Column({ name: 'message_count', type: 'integer', nullable: true })
  messageCount!: number | null;

  @Column({ name: 'participant_ids', type: 'jsonb', nullable: true })
  participantIds!: string[] | null;

  @Column({ name: 'last_message_at', type: 'timestamptz', nullable: true })
  lastMessageAt!: Date | null;

  @Column({ name: 'written_at', type: 'timestamptz', nullable: true })
  writtenAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  terms!: string | null;
}

/** `memory_facts`: social memory, one row per fact about a person in a group. */
@Entity({ name: 'memory_facts' })
@Index('memory_facts_subject_idx', ['groupId', 'subjectUserId'])
@Index('memory_facts_category_idx', ['subjectUserId', 'category'])
@Index('memory_facts_terms_idx', { synchronize: false })
export class FactRecord implements FactRow {
  @PrimaryColumn({ name: 'fact_id', type: 'text', primaryKeyConstraintName: 'memory_facts_pkey' })
  factId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'subject_user_id', type: 'text', nullable: true })
  subjectUserId!: string | null;

  @Column({ name: 'subject_name', type: 'text', nullable: true })
  subjectName!: string | null;

  @Column({ type: 'text', nullable: true })
  category!: string | null;

  @Column({ type: 'text', nullable: true })
  key!: string | null;

  @Column({ type: 'text', nullable: true })
  value!: string | null;

  @Column({ name: 'related_user_id', type: 'text', nullable: true })
  relatedUserId!: string | null;

  @Column({ name: 'first_learned_at', type: 'timestamptz', nullable: true })
  firstLearnedAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  terms!: string | null;

  @Column({ type: 'text', nullable: true })
  status!: string | null;

  @Column({ type: 'double precision', nullable: true })
  confidence!: number | null;

  @Column({ type: 'integer', nullable: true })
  revision!: number | null;

  @Column({ type: 'integer', nullable: true })
  sightings!: number | null;

  @Column({ name: 'replaced_by', type: 'text', nullable: true })
  replacedBy!: string | null;

  @Column({ name: 'learned_at', type: 'timestamptz', nullable: true })
  learnedAt!: Date | null;

  /** Version of (`status`, `replaced_by`): epoch ms of the learning that set them, so the newest decides. */
  @Column({ type: 'bigint', nullable: true })
  version!: number | null;
}

/** `memory_jargon`: words a group uses in its own way, with their inferred meaning. */
@Entity({ name: 'memory_jargon' })
export class JargonRecord implements JargonRow {
  @PrimaryColumn({ name: 'group_id', type: 'text', primaryKeyConstraintName: 'memory_jargon_pkey' })
  groupId!: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'memory_jargon_pkey' })
  term!: string;

  @Column({ type: 'text', nullable: true })
  status!: string | null;

  @Column({ type: 'text', nullable: true })
  meaning!: string | null;

  @Column({ type: 'integer', nullable: true })
  sightings!: number | null;

  @Column({ type: 'integer', nullable: true })
  users!: number | null;

  @Column({ name: 'learned_at', type: 'timestamptz', nullable: true })
  learnedAt!: Date | null;
}
