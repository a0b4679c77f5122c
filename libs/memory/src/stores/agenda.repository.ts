import { Injectable } from '@nestjs/common';
import type { AgendaView, ActivityView } from './memory.views.js';
import { DataSource } from 'typeorm';
import type { DisclosureLevel } from '@app/contracts';

interface ActivitySqlRow {
  id: string;
  title: string;
  description: string;
  detail: string | null;
  started_at: Date;
  expected_duration_minutes: number;
  status: string;
  phase: string | null;
  private: boolean | null;
  phases: { name: string; until: number }[] | null;
  mood: string | null;
  goal_id: string | null;
  next_title: string | null;
  next_at: Date | null;
  completed_at: Date | null;
}

const ACTIVITY_COLUMNS = `id, title, description, detail, started_at, expected_duration_minutes, status, phase, private, phases,
  mood, goal_id, next_title, next_at, completed_at`;

function toActivity(r: ActivitySqlRow): ActivityView {
  return {
    id: r.id,
    title: r.title,
    description: r.description ?? '',
    detail: r.detail,
    startedAt: new Date(r.started_at),
    expectedDurationMinutes: Number(r.expected_duration_minutes),
    status: r.status,
    phase: r.phase,
    private: r.private === true,
    phases: r.phases ?? [],
    mood: r.mood,
    goalId: r.goal_id,
    nextTitle: r.next_title,
    nextAt: r.next_at ? new Date(r.next_at) : null,
    completedAt: r.completed_at ? new Date(r.completed_at) : null,
  };
}

/** Self memory (ADR-0016): the life line as projected from `personal.*` events. Read-only here. */
@Injectable()
export class AgendaRepository {
  constructor(private readonly dataSource: DataSource) {}

  async agenda(): Promise<AgendaView | null> {
    const [row] = await this.dataSource.query<
      {
        persona_id: string;
        mood: string | null;
        timezone: string | null;
        default_disclosure: string | null;
        group_disclosure: Record<string, DisclosureLevel> | null;
        long_term_goals: AgendaView['goals'] | null;
      }[]
    >(
      `SELECT persona_id, mood, timezone, default_disclosure, group_disclosure, long_term_goals
       FROM agenda ORDER BY loaded_at DESC NULLS LAST LIMIT 1`,
    );
    if (!row) return null;
    return {
      personaId: row.persona_id,
      mood: row.mood ?? '',
      timezone: row.timezone ?? 'Asia/Shanghai',
      defaultDisclosure: (row.default_disclosure as DisclosureLevel | null) ?? 'open',
      groupDisclosure: row.group_disclosure ?? {},
      goals: row.long_term_goals ?? [],
    };
  }

  /** The newest activity started at or before `at` (product time), whatever its status. */
  async latestStarted(at: Date): Promise<ActivityView | null> {
    const [row] = await this.dataSource.query<ActivitySqlRow[]>(
      `SELECT ${ACTIVITY_COLUMNS} FROM activities WHERE started_at <= $1 ORDER BY started_at DESC LIMIT 1`,
      [at],
    );
    return row ? toActivity(row) : null;
  }

  /** Activities that ended before `at`, newest first. */
  async recentCompleted(at: Date, limit: number): Promise<ActivityView[]> {
    const rows = await this.dataSource.query<ActivitySqlRow[]>(
      `SELECT ${ACTIVITY_COLUMNS} FROM activities WHERE status = 'completed' AND completed_at <= $1
       ORDER BY completed_at DESC LIMIT $2`,
      [at, limit],
    );
    return rows.map(toActivity);
  }

  /** Beats of an activity up to `at`, oldest first. */
  async beats(activityId: string, at: Date): Promise<{ text: string; at: Date }[]> {
    const rows = await this.dataSource.query<{ text: string; at: Date }[]>(
      `SELECT text, at FROM beats WHERE activity_id = $1 AND at <= $2 ORDER BY idx`,
      [activityId, at],
    );
    return rows.map((r) => ({ text: r.text, at: new Date(r.at) }));
  }

  /** Milestones reached, newest first. */
  async milestones(limit: number): Promise<{ title: string; reachedAt: Date }[]> {
    const rows = await this.dataSource.query<{ title: string; reached_at: Date }[]>(
      `SELECT title, reached_at FROM agenda_milestones ORDER BY reached_at DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ title: r.title, reachedAt: new Date(r.reached_at) }));
  }
}
