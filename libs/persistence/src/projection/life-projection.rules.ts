import { EventKind, type EventOf } from '@app/contracts';
import {
  ACTIVITY_COMPLETED_VERSION,
  type ActivityRow,
  type AgendaMilestoneRow,
  type AgendaRow,
  type BeatRow,
} from './life.rows.js';

/** What the life fold writes, one patch at a time (the projection's `put`). */
export interface LifePatches {
  agenda(patch: Partial<AgendaRow>): void;
  activities(patch: Partial<ActivityRow>): void;
  beats(patch: Partial<BeatRow>): void;
  agendaMilestones(patch: Partial<AgendaMilestoneRow>): void;
}

export type LifeKind =
  | 'personal.agenda.loaded'
  | 'personal.activity.started'
  | 'personal.activity.beat'
  | 'personal.activity.completed'
  | 'personal.activity.detailed'
  | 'personal.milestone.reached';

function time(text: string | undefined): Date | null {
  if (text === undefined) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** Fold one `personal.*` event into agenda, activity, beat and milestone rows. */
export function foldLifeEvent(event: EventOf<LifeKind>, out: LifePatches): void {
  const at = new Date(event.createdAt);
  switch (event.kind) {
    case EventKind.PersonalAgendaLoaded: {
      const p = (event as EventOf<'personal.agenda.loaded'>).payload;
      out.agenda({
        personaId: p.personaId,
        scriptVersion: p.scriptVersion,
        mood: p.mood,
        timezone: p.timezone,
        longTermGoals: p.longTermGoals.map((g) => ({ ...g })),
        milestones: p.milestones.map((m) => ({ ...m })),
        defaultDisclosure: p.defaultDisclosure,
        groupDisclosure: { ...p.groupDisclosure },
        loadedAt: at,
      });
      return;
    }
    case EventKind.PersonalActivityStarted:
    case EventKind.PersonalActivityBeat:
    case EventKind.PersonalActivityCompleted: {
      const p = (event as EventOf<'personal.activity.started'>).payload;
      const completed = event.kind === EventKind.PersonalActivityCompleted;
      const beat = event.kind === EventKind.PersonalActivityBeat;
      const when = time(p.at) ?? at;
      out.activities({
        id: p.activityId,
        title: p.title,
        description: p.description,
        startedAt: time(p.startedAt),
        expectedDurationMinutes: p.expectedDurationMinutes,
        goalId: p.goalId ?? null,
        private: p.private ?? null,
        phases: p.phases ? p.phases.map((x) => ({ name: x.name, until: x.until })) : null,
        completedAt: completed ? when : null,
        status: completed ? 'completed' : 'active',
        phase: p.phase ?? null,
        progress: p.progress,
        nextBeatAt: time(p.nextBeatAt),
        mood: p.mood ?? null,
        nextTitle: p.nextTitle ?? null,
        nextAt: time(p.nextAt),
        version: completed ? ACTIVITY_COMPLETED_VERSION : beat ? (p.beatIndex ?? 0) + 1 : 0,
      });
      if (beat && p.beat !== undefined) {
        out.beats({ activityId: p.activityId, idx: p.beatIndex ?? 0, text: p.beat, at: when, progress: p.progress });
      }
      return;
    }
    case EventKind.PersonalActivityDetailed: {
      const p = (event as EventOf<'personal.activity.detailed'>).payload;
      out.activities({ id: p.activityId, detail: p.detail });
      return;
    }
    case EventKind.PersonalMilestoneReached: {
      const p = (event as EventOf<'personal.milestone.reached'>).payload;
      out.agendaMilestones({
        milestoneId: p.milestoneId,
        goalId: p.goalId,
        title: p.title,
        activityId: p.activityId,
        reachedAt: time(p.at) ?? at,
      });
      return;
    }
  }
}
