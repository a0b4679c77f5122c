import type { PersonalActivityPayload } from '@app/contracts';
import { minutesOfDay, type RoutineActivity } from '@app/persona';

/** Progress points at which an activity tells a beat (ADR §10): half-way for now. */
export const BEAT_MILESTONES: readonly number[] = [0.5];

const DAY_SECONDS = 86400;

/** One day's occurrence of a routine activity. */
export interface ActivityOccurrence {
  /** Stable for the occurrence: the local date and time it started (`2025-05-13T23:45`). */
  activityId: string;
  title: string;
  description: string;
  startedAt: Date;
  expectedDurationMinutes: number;
  /** 0–1. */
  progress: number;
  beats: string[];
}

/** What the life director remembers between ticks (stored as JSON). */
export interface LifeState {
  activityId: string;
  title: string;
  description: string;
  startedAt: string;
  expectedDurationMinutes: number;
  /** How many milestones have had their beat. */
  beatsTold: number;
  beats: string[];
}

export interface TickPlan {
  completed: PersonalActivityPayload | null;
  started: PersonalActivityPayload | null;
  beats: PersonalActivityPayload[];
  /** The state to keep; `null` when nothing is going on. */
  next: LifeState | null;
  /** False when the tick changes nothing (a repeated tick). */
  changed: boolean;
}

interface LocalTime {
  date: string;
  /** Seconds since local midnight, fractional. */
  seconds: number;
}

function localTime(instant: Date, timezone: string): LocalTime {
  const parts: Record<string, string> = {};
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  for (const part of format.formatToParts(instant)) parts[part.type] = part.value;
  const seconds =
    Number(parts.hour) * 3600 + Number(parts.minute) * 60 + Number(parts.second) + instant.getMilliseconds() / 1000;
  return { date: `${parts.year}-${parts.month}-${parts.day}`, seconds };
}

/**
 * The routine activity going on at `now` in the persona's time zone, or `null` in a gap between activities.
 * Activities repeat daily and may run past midnight (a night's sleep started yesterday is still going on).
 */
export function currentActivity(routine: RoutineActivity[], now: Date, timezone: string): ActivityOccurrence | null {
  const local = localTime(now, timezone);
  let best: { activity: RoutineActivity; elapsed: number } | null = null;
  for (const activity of routine) {
    const elapsed = (((local.seconds - minutesOfDay(activity.at) * 60) % DAY_SECONDS) + DAY_SECONDS) % DAY_SECONDS;
    if (elapsed >= activity.durationMinutes * 60) continue;
    if (!best || elapsed < best.elapsed) best = { activity, elapsed };
  }
  if (!best) return null;
  const startedAt = new Date(now.getTime() - best.elapsed * 1000);
  return {
    activityId: `${localTime(startedAt, timezone).date}T${best.activity.at}`,
    title: best.activity.title,
    description: best.activity.description,
    startedAt,
    expectedDurationMinutes: best.activity.durationMinutes,
    progress: Math.min(1, best.elapsed / (best.activity.durationMinutes * 60)),
    beats: best.activity.beats ?? [],
  };
}

function payload(
  activity: Pick<LifeState, 'activityId' | 'title' | 'description' | 'expectedDurationMinutes'>,
  startedAt: string,
  progress: number,
  beat?: string,
): PersonalActivityPayload {
  return {
    activityId: activity.activityId,
    title: activity.title,
    description: activity.description,
    startedAt,
    expectedDurationMinutes: activity.expectedDurationMinutes,
    progress,
    ...(beat !== undefined ? { beat } : {}),
  };
}

function beatText(beats: string[], milestone: number, index: number, title: string): string {
  return beats[index] ?? `「${title}」进行到${milestone === 0.5 ? '一半' : `${Math.round(milestone * 100)}%`}了`;
}

/**
 * Compare what was going on at the last tick with what is going on now: the previous activity completes, the
 * new one starts, and every milestone passed since the last tick tells its beat, each exactly once.
 */
export function planTick(previous: LifeState | null, current: ActivityOccurrence | null): TickPlan {
  const same = previous !== null && current !== null && previous.activityId === current.activityId;
  const completed = previous && !same ? payload(previous, previous.startedAt, 1) : null;
  if (!current) return { completed, started: null, beats: [], next: null, changed: completed !== null };

  const startedAt = current.startedAt.toISOString();
  const started = same ? null : payload(current, startedAt, current.progress);
  const told = same ? previous.beatsTold : 0;
  const beats: PersonalActivityPayload[] = [];
  let beatsTold = told;
  BEAT_MILESTONES.forEach((milestone, index) => {
    if (index < told || current.progress < milestone) return;
    beats.push(payload(current, startedAt, current.progress, beatText(current.beats, milestone, index, current.title)));
    beatsTold = index + 1;
  });
  const next: LifeState = {
    activityId: current.activityId,
    title: current.title,
    description: current.description,
    startedAt: same ? previous.startedAt : startedAt,
    expectedDurationMinutes: current.expectedDurationMinutes,
    beatsTold,
    beats: current.beats,
  };
  return { completed, started, beats, next, changed: completed !== null || started !== null || beats.length > 0 };
}
