import { zonedFormat, type PersonalActivityPayload } from '@app/contracts';
import { minutesOfDay } from '@app/persona';
import type { LifeActivity, LifeScript, ScriptMilestone } from './life-script.js';

/*
 * The life line as a pure fold over time (ADR-0001 §10): given what the director had recorded up to its last tick
 * and the script, walk every activity occurrence between the last tick and now, in order, and say what happened —
 * starts, beats, completions, milestones — each exactly once. A tick after a long pause (a restart) catches up
 * instead of skipping, within a horizon; two ticks at the same instant record nothing the second time.
 */

const MINUTE = 60_000;
const DAY = 86_400_000;

/** One day's occurrence of a script activity. */
export interface Occurrence {
  /** Stable: the local date and start time (`2025-05-13T23:45`). */
  activityId: string;
  activity: LifeActivity;
  startedAt: Date;
  /** Scheduled end, cut short when the next activity starts earlier. */
  endsAt: Date;
}

/** What the director keeps between ticks (Redis, committed with the tick's events). */
export interface LifeState {
  scriptVersion: string;
  /** Product time of the last tick. */
  tickedAt: string;
  /** The activity going on at the last tick, or null in a gap. */
  current: {
    activityId: string;
    title: string;
    startedAt: string;
    endsAt: string;
    beatsTold: number;
    payload: PersonalActivityPayload;
  } | null;
  /** Completed activities per goal, for milestones. */
  goalSessions: Record<string, number>;
  milestonesReached: string[];
}

export type LifeChange =
  | { kind: 'started' | 'beat' | 'completed'; at: Date; payload: PersonalActivityPayload }
  | { kind: 'milestone'; at: Date; milestone: ScriptMilestone; activityId: string };

export interface TickPlan {
  changes: LifeChange[];
  next: LifeState;
  /** The script version changed (or was never announced): the agenda must be (re)loaded. */
  agendaChanged: boolean;
  /** Occurrences older than the catch-up horizon that were passed over. */
  skippedBeyondHorizon: number;
}

interface LocalParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

function localParts(instant: Date, timezone: string): LocalParts {
  const format = zonedFormat('en-US', timezone, {
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(instant)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  return parts as unknown as LocalParts;
}

/** The instant of local wall time `minutes` after midnight on the local date of `day` (Y-M-D) in `timezone`. */
function zoned(year: number, month: number, day: number, minutes: number, timezone: string): Date {
  const guess = Date.UTC(year, month - 1, day, 0, minutes);
  // Two passes settle the offset around DST changes.
  let at = guess;
  for (let i = 0; i < 2; i++) {
    const p = localParts(new Date(at), timezone);
    const shown = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
    at += guess - shown;
  }
  return new Date(at);
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** Every occurrence overlapping [from, to], oldest first; each ends no later than the next one starts. */
export function occurrencesBetween(script: LifeScript, from: Date, to: Date): Occurrence[] {
  const starts: Occurrence[] = [];
  const longest = Math.max(1, ...script.activities.map((a) => a.durationMinutes)) * MINUTE;
  for (let t = from.getTime() - longest - DAY; t <= to.getTime() + DAY; t += DAY) {
    const local = localParts(new Date(t), script.timezone);
    for (const activity of script.activities) {
      const startedAt = zoned(local.year, local.month, local.day, minutesOfDay(activity.at), script.timezone);
      const activityId = `${local.year}-${pad(local.month)}-${pad(local.day)}T${activity.at}`;
      starts.push({
        activityId,
        activity,
        startedAt,
        endsAt: new Date(startedAt.getTime() + activity.durationMinutes * MINUTE),
      });
    }
  }
  const unique = new Map(starts.map((o) => [o.activityId + o.activity.title, o]));
  const sorted = [...unique.values()].sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  sorted.forEach((o, i) => {
    const next = sorted[i + 1];
    if (next && next.startedAt < o.endsAt) o.endsAt = next.startedAt;
  });
  return sorted.filter((o) => o.startedAt <= to && o.endsAt > from && o.endsAt > o.startedAt);
}

/** Progress of an occurrence at `now`, 0–1, against its planned duration. */
export function progressAt(o: Pick<Occurrence, 'startedAt' | 'activity'>, now: Date): number {
  const elapsed = now.getTime() - o.startedAt.getTime();
  return Math.min(1, Math.max(0, elapsed / (o.activity.durationMinutes * MINUTE)));
}

export function phaseAt(activity: LifeActivity, progress: number): string {
  return (activity.phases.find((p) => progress < p.until) ?? activity.phases[activity.phases.length - 1]!).name;
}

function beatTime(o: Occurrence, index: number): Date {
  return new Date(o.startedAt.getTime() + o.activity.beats[index]!.at * o.activity.durationMinutes * MINUTE);
}

function nextOccurrence(script: LifeScript, after: Occurrence): Occurrence | undefined {
  const ahead = occurrencesBetween(script, after.endsAt, new Date(after.endsAt.getTime() + DAY));
  return ahead.find((o) => o.startedAt >= after.endsAt && o.activityId !== after.activityId);
}

function payloadAt(
  script: LifeScript,
  o: Occurrence,
  at: Date,
  beatsTold: number,
  extra: Partial<PersonalActivityPayload> = {},
): PersonalActivityPayload {
  const progress = progressAt(o, at);
  const nextBeat = beatsTold < o.activity.beats.length ? beatTime(o, beatsTold) : undefined;
  const next = nextOccurrence(script, o);
  return {
    activityId: o.activityId,
    title: o.activity.title,
    description: o.activity.description,
    startedAt: o.startedAt.toISOString(),
    expectedDurationMinutes: o.activity.durationMinutes,
    progress,
    phase: phaseAt(o.activity, progress),
    at: at.toISOString(),
    mood: o.activity.mood ?? script.mood,
    private: o.activity.private,
    phases: o.activity.phases.map((ph) => ({ name: ph.name, until: ph.until })),
    ...(nextBeat && nextBeat <= o.endsAt ? { nextBeatAt: nextBeat.toISOString() } : {}),
    ...(o.activity.goalId !== undefined ? { goalId: o.activity.goalId } : {}),
    ...(next ? { nextTitle: next.activity.title, nextAt: next.startedAt.toISOString() } : {}),
    ...extra,
  };
}

/**
 * Advance the life line from `previous` to `now`. `horizonMs` bounds catch-up after a long pause: occurrences
 * that ended before `now - horizonMs` are counted in `skippedBeyondHorizon`, not replayed. On the very first tick
 * only what is going on now is recorded (no invented history).
 */
export function planTick(previous: LifeState | null, script: LifeScript, now: Date, horizonMs: number): TickPlan {
  const changes: LifeChange[] = [];
  const goalSessions = { ...(previous?.goalSessions ?? {}) };
  const milestonesReached = [...(previous?.milestonesReached ?? [])];
  const open = previous?.current ?? null;
  const horizon = new Date(now.getTime() - horizonMs);
  const from = previous ? new Date(Math.max(Date.parse(previous.tickedAt), horizon.getTime())) : now;
  let skippedBeyondHorizon = 0;
  if (previous && Date.parse(previous.tickedAt) < horizon.getTime()) {
    skippedBeyondHorizon = occurrencesBetween(script, new Date(previous.tickedAt), horizon).filter(
      (o) => o.endsAt <= horizon && o.activityId !== open?.activityId,
    ).length;
  }

  const timeline = occurrencesBetween(script, from, now);
  let current: LifeState['current'] = null;
  let openSeen = false;

  const complete = (o: Occurrence, beatsTold: number): void => {
    changes.push({
      kind: 'completed',
      at: o.endsAt,
      payload: { ...payloadAt(script, o, o.endsAt, beatsTold), progress: 1 },
    });
    const goal = o.activity.goalId;
    if (goal === undefined) return;
    goalSessions[goal] = (goalSessions[goal] ?? 0) + 1;
    for (const milestone of script.milestones) {
      if (milestone.goal !== goal || milestonesReached.includes(milestone.id)) continue;
      if (goalSessions[goal] >= milestone.afterSessions) {
        milestonesReached.push(milestone.id);
        changes.push({ kind: 'milestone', at: o.endsAt, milestone, activityId: o.activityId });
      }
    }
  };

  for (const o of timeline) {
    const isOpen = open !== null && o.activityId === open.activityId && o.activity.title === open.title;
    // Never seen before: it started after the last tick (or, on the very first tick, it is going on now).
    const unseen = previous ? o.startedAt.getTime() > Date.parse(previous.tickedAt) : o.endsAt > now;
    if (!isOpen && !unseen) continue;
    if (isOpen) openSeen = true;
    let told = isOpen ? open.beatsTold : 0;
    if (!isOpen) changes.push({ kind: 'started', at: o.startedAt, payload: payloadAt(script, o, o.startedAt, 0) });
    while (told < o.activity.beats.length && beatTime(o, told) <= now && beatTime(o, told) <= o.endsAt) {
      const at = beatTime(o, told);
      const beat = o.activity.beats[told]!;
      told += 1;
      changes.push({
        kind: 'beat',
        at,
        payload: payloadAt(script, o, at, told, { beat: beat.text, beatIndex: told - 1 }),
      });
    }
    if (o.endsAt <= now) {
      complete(o, told);
    } else {
      current = {
        activityId: o.activityId,
        title: o.activity.title,
        startedAt: o.startedAt.toISOString(),
        endsAt: o.endsAt.toISOString(),
        beatsTold: told,
        payload: payloadAt(script, o, now, told),
      };
    }
  }

  if (open !== null && !openSeen) {
    // The open activity vanished from the script (it was edited): close it with what was recorded.
    const at = new Date(Math.min(Date.parse(open.endsAt), now.getTime()));
    changes.push({ kind: 'completed', at, payload: { ...open.payload, progress: 1, at: at.toISOString() } });
  }

  changes.sort((a, b) => a.at.getTime() - b.at.getTime());
  return {
    changes,
    next: { scriptVersion: script.version, tickedAt: now.toISOString(), current, goalSessions, milestonesReached },
    agendaChanged: previous?.scriptVersion !== script.version,
    skippedBeyondHorizon,
  };
}
