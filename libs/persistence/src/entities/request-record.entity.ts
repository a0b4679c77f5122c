import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { RequestRow } from '../projection/projection.rules.js';

/** `requests`: friend requests, join requests and invitations, as the implementation reported them. */
@Entity({ name: 'requests' })
export class RequestRecord implements RequestRow {
  @PrimaryColumn({ name: 'event_id', type: 'text', primaryKeyConstraintName: 'requests_pkey' })
  eventId!: string;

  @Column({ name: 'group_id', type: 'text', nullable: true })
  groupId!: string | null;

  @Column({ name: 'request_type', type: 'text', nullable: true })
  requestType!: string | null;

  @Column({ name: 'sub_type', type: 'text', nullable: true })
  subType!: string | null;

  @Column({ name: 'user_id', type: 'text', nullable: true })
  userId!: string | null;

  @Column({ type: 'text', nullable: true })
  comment!: string | null;

  @Column({ type: 'text', nullable: true })
  flag!: string | null;

  @Column({ name: 'reported_at', type: 'timestamptz', nullable: true })
  reportedAt!: Date | null;
}
