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

/** One step of an activity's progress, as the life line wrote it. */
export interface Beat {
  text: string;
  at: Date;
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
  /** The agenda query in flight, which callers arriving meanwhile share. */
  private pending: Promise<AgendaView | null> | undefined;

  constructor(private readonly dataSource: DataSource) {}

  /**
   * The persona's agenda row. Calls made while a read is in flight share it: one episode's prompt sections ask for
   * it three times at once (the activity, the memory and the sender section's timezone), and with the pool's few
   * connections those reads queued behind each other. Nothing here writes the row, and the shared read started at
   * most one query's time before the call, so it is as current as a fresh one of a projection would be.
   */
  agenda(): Promise<AgendaView | null> {
    this.pending ??= this.readAgenda().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async readAgenda(): Promise<AgendaView | null> {
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

  /**
   * The newest activity started at or before `at` (product time), whatever its status, with its beats up to `at`
   * (oldest first), in one query: the prompt's activity section needs both, and read one after the other they were
   * two waits on an episode's way to its first model call.
   */
  async latestStartedWithBeats(at: Date): Promise<{ activity: ActivityView; beats: Beat[] } | null> {
    const [row] = await this.dataSource.query<(ActivitySqlRow & { beats: { text: string; at: string }[] })[]>(
      `SELECT ${ACTIVITY_COLUMNS},
         COALESCE((SELECT json_agg(json_build_object('text', b.text, 'at', b.at) ORDER BY b.idx)
                   FROM beats b WHERE b.activity_id = a.id AND b.at <= $1), '[]'::json) AS beats
       FROM activities a WHERE started_at <= $1 ORDER BY started_at DESC LIMIT 1`,
      [at],
    );
    if (!row) return null;
    return { activity: toActivity(row), beats: row.beats.map((b) => ({ text: b.text, at: new Date(b.at) })) };
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

  /** Milestones reached, newest first. */
  async milestones(limit: number): Promise<{ title: string; reachedAt: Date }[]> {
    const rows = await this.dataSource.query<{ title: string; reached_at: Date }[]>(
      `SELECT title, reached_at FROM agenda_milestones ORDER BY reached_at DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ title: r.title, reachedAt: new Date(r.reached_at) }));
  }
}
