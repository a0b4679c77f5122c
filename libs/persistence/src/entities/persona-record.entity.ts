import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { PersonaRow } from '../projection/projection.rules.js';

/** `personas`: every persona policy version a process ran with (read-only to the model). */
@Entity({ name: 'personas' })
export class PersonaRecord implements PersonaRow {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'personas_pkey' })
  version!: string;

  @Column({ type: 'text', nullable: true })
  name!: string | null;

  @Column({ type: 'text', nullable: true })
  source!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  policy!: Record<string, unknown> | null;

  @Column({ name: 'published_at', type: 'timestamptz', nullable: true })
  publishedAt!: Date | null;
}
