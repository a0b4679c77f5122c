/** Read-model rows of the life line (ADR-0001 §10), projected from `personal.*` events. */

export interface AgendaRow {
  personaId: string;
  scriptVersion: string | null;
  mood: string | null;
  timezone: string | null;
  longTermGoals: Record<string, unknown>[] | null;
  milestones: Record<string, unknown>[] | null;
  defaultDisclosure: string | null;
  groupDisclosure: Record<string, string> | null;
  loadedAt: Date | null;
}

export type ActivityStatus = 'active' | 'completed';

export interface ActivityRow {
  id: string;
  title: string | null;
  description: string | null;
  startedAt: Date | null;
  expectedDurationMinutes: number | null;
  goalId: string | null;
  private: boolean | null;
  phases: { name: string; until: number }[] | null;
  detail: string | null;
  completedAt: Date | null;
  status: ActivityStatus | null;
  phase: string | null;
  progress: number | null;
  nextBeatAt: Date | null;
  mood: string | null;
  nextTitle: string | null;
  nextAt: Date | null;
  version: number | null;
}

export interface BeatRow {
  activityId: string;
  idx: number;
  text: string | null;
  at: Date | null;
  progress: number | null;
}

export interface AgendaMilestoneRow {
  milestoneId: string;
  goalId: string | null;
  title: string | null;
  activityId: string | null;
  reachedAt: Date | null;
}

/** Version of an activity's live columns when it completes (beats count up from 1). */
export const ACTIVITY_COMPLETED_VERSION = 10_000;
