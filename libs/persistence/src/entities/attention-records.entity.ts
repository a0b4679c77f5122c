import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { GroupActorRow, ThreadRow, ThreadStatus } from '../projection/attention.rows.js';

/** `threads`: every thread attention linked, with its participants, last activity and open questions. */
@Entity({ name: 'threads' })
export class ThreadRecord implements ThreadRow {
  @PrimaryColumn({ name: 'thread_id', type: 'text', primaryKeyConstraintName: 'threads_pkey' })
  threadId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'last_activity_at', type: 'timestamptz', nullable: true })
  lastActivityAt!: Date | null;

  @Column({ type: 'jsonb', nullable: true })
  participants!: string[] | null;

  @Column({ type: 'integer', nullable: true })
  messages!: number | null;

  @Column({ name: 'bot_joined', type: 'boolean', nullable: true })
  botJoined!: boolean | null;

  @Column({ name: 'last_bot_reply_at', type: 'timestamptz', nullable: true })
  lastBotReplyAt!: Date | null;

  @Column({ name: 'open_questions', type: 'jsonb', nullable: true })
  openQuestions!: ThreadRow['openQuestions'];

  @Column({ type: 'text', nullable: true })
  status!: ThreadStatus | null;

  @Column({ name: 'last_link', type: 'text', nullable: true })
  lastLink!: string | null;

  @Column({ name: 'idle_at', type: 'timestamptz', nullable: true })
  idleAt!: Date | null;

  @Column({ type: 'integer', nullable: true })
  version!: number | null;
}

/** `group_actors`: per group, the bot's last reply, its reply budget, cooldown and live threads. */
@Entity({ name: 'group_actors' })
export class GroupActorRecord implements GroupActorRow {
  @PrimaryColumn({ name: 'group_id', type: 'text', primaryKeyConstraintName: 'group_actors_pkey' })
  groupId!: string;

  @Column({ name: 'last_bot_reply_at', type: 'timestamptz', nullable: true })
  lastBotReplyAt!: Date | null;

  @Column({ name: 'last_partner_id', type: 'text', nullable: true })
  lastPartnerId!: string | null;

  @Column({ name: 'replies_in_window', type: 'integer', nullable: true })
  repliesInWindow!: number | null;

  @Column({ type: 'integer', nullable: true })
  budget!: number | null;

  @Column({ name: 'cooldown_until', type: 'timestamptz', nullable: true })
  cooldownUntil!: Date | null;

  @Column({ name: 'active_threads', type: 'jsonb', nullable: true })
  activeThreads!: string[] | null;

  @Column({ name: 'active_events', type: 'integer', nullable: true })
  activeEvents!: number | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;

  @Column({
    type: 'bigint',
    nullable: true,
    transformer: { to: (v: number | null) => v, from: (v: string | null) => (v === null ? null : Number(v)) },
  })
  version!: number | null;
}
