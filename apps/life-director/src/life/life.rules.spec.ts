import type { RoutineActivity } from '@app/persona';
import { currentActivity, planTick, type LifeState } from './life.rules.js';

const TZ = 'Asia/Shanghai';
const routine: RoutineActivity[] = [
  { at: '08:00', title: '上课', description: '专业课', durationMinutes: 120, beats: ['被老师点名了'] },
  { at: '12:00', title: '午饭', description: '食堂', durationMinutes: 60 },
  { at: '23:30', title: '睡觉', description: '关灯', durationMinutes: 480 },
];

/** A Shanghai wall-clock time on 2025-05-13 (UTC+8), `dayOffset` days later. */
function at(hhmm: string, dayOffset = 0): Date {
  const [h, m] = hhmm.split(':').map(Number);
  return new Date(Date.UTC(2025, 4, 13 + dayOffset, h! - 8, m));
}

function stateOf(plan: ReturnType<typeof planTick>): LifeState | null {
  return plan.next;
}

describe('current activity', () => {
  it('finds the activity going on at a time, with its progress', () => {
    const activity = currentActivity(routine, at('09:00'), TZ);
    expect(activity).toMatchObject({ title: '上课', activityId: '2025-05-13T08:00', progress: 0.5 });
    expect(activity!.startedAt.toISOString()).toBe(at('08:00').toISOString());
    expect(currentActivity(routine, at('08:00'), TZ)!.progress).toBe(0);
  });

  it('finds nothing in a gap between activities', () => {
    expect(currentActivity(routine, at('10:00'), TZ)).toBeNull();
    expect(currentActivity(routine, at('15:00'), TZ)).toBeNull();
  });

  it('follows an activity across midnight and dates it by when it started', () => {
    const before = currentActivity(routine, at('23:45'), TZ);
    const after = currentActivity(routine, at('03:30', 1), TZ);
    expect(before).toMatchObject({ title: '睡觉', activityId: '2025-05-13T23:30' });
    expect(after).toMatchObject({ title: '睡觉', activityId: '2025-05-13T23:30', progress: 0.5 });
    expect(after!.startedAt.toISOString()).toBe(at('23:30').toISOString());
    expect(currentActivity(routine, at('07:30', 1), TZ)).toBeNull();
  });

  it('reads the routine in the persona time zone', () => {
    // 09:00 in Shanghai is 03:00 in Berlin (summer time): still asleep there.
    expect(currentActivity(routine, at('09:00'), 'Europe/Berlin')).toMatchObject({ title: '睡觉' });
  });
});

describe('tick plan', () => {
  it('starts the first activity', () => {
    const plan = planTick(null, currentActivity(routine, at('08:10'), TZ));
    expect(plan.started).toMatchObject({ title: '上课', activityId: '2025-05-13T08:00' });
    expect(plan.completed).toBeNull();
    expect(plan.beats).toEqual([]);
    expect(plan.changed).toBe(true);
  });

  it('changes nothing on a repeated tick', () => {
    const first = planTick(null, currentActivity(routine, at('08:10'), TZ));
    const again = planTick(stateOf(first), currentActivity(routine, at('08:20'), TZ));
    expect(again).toMatchObject({ started: null, completed: null, beats: [], changed: false });
  });

  it('tells the half-way beat exactly once', () => {
    const first = planTick(null, currentActivity(routine, at('08:10'), TZ));
    const half = planTick(stateOf(first), currentActivity(routine, at('09:05'), TZ));
    expect(half.beats).toHaveLength(1);
    expect(half.beats[0]).toMatchObject({ beat: '被老师点名了', title: '上课' });
    expect(half.next!.startedAt).toBe(first.next!.startedAt);
    const later = planTick(stateOf(half), currentActivity(routine, at('09:50'), TZ));
    expect(later.beats).toEqual([]);
    expect(later.changed).toBe(false);
  });

  it('makes up a beat when the activity has none written', () => {
    const plan = planTick(null, currentActivity(routine, at('12:40'), TZ));
    expect(plan.beats.map((b) => b.beat)).toEqual(['「午饭」进行到一半了']);
  });

  it('completes the previous activity and starts the next', () => {
    const morning = planTick(null, currentActivity(routine, at('09:05'), TZ));
    const lunch = planTick(stateOf(morning), currentActivity(routine, at('12:10'), TZ));
    expect(lunch.completed).toMatchObject({ title: '上课', progress: 1 });
    expect(lunch.started).toMatchObject({ title: '午饭' });
  });

  it('completes an activity when a gap begins, and then rests', () => {
    const morning = planTick(null, currentActivity(routine, at('09:05'), TZ));
    const gap = planTick(stateOf(morning), currentActivity(routine, at('10:30'), TZ));
    expect(gap).toMatchObject({ started: null, next: null, changed: true });
    expect(gap.completed).toMatchObject({ title: '上课' });
    expect(planTick(null, currentActivity(routine, at('10:40'), TZ)).changed).toBe(false);
  });

  it('starts the same routine entry again the next day as a new activity', () => {
    const today = planTick(null, currentActivity(routine, at('08:10'), TZ));
    const tomorrow = planTick(stateOf(today), currentActivity(routine, at('08:10', 1), TZ));
    expect(tomorrow.completed).toMatchObject({ activityId: '2025-05-13T08:00' });
    expect(tomorrow.started).toMatchObject({ activityId: '2025-05-14T08:00' });
  });
});
