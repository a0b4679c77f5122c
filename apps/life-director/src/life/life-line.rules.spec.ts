import { parsePersona } from '@app/persona';
import { occurrencesBetween, planTick } from './life-line.rules.js';
import { parseLifeScript } from './life-script.js';
import { validateDetail } from './activity-detail.rules.js';

const persona = parsePersona({
  identity: { name: '林小满', aliases: [], description: '大三学生' },
  values: ['真诚'],
  mood: '平静',
  interests: ['猫'],
  participationBias: 0.5,
  curiosity: 0.5,
  sociability: 0.5,
  patience: 0.5,
  toolBias: 0.5,
  speakingStyle: '口语',
  routine: [
    { at: '08:00', title: '上课', description: '专业课', durationMinutes: 120, beats: ['被点名了'] },
    { at: '23:30', title: '睡觉', description: '关灯', durationMinutes: 480 },
  ],
});

const script = parseLifeScript(
  {
    personaId: 'p',
    goals: [{ id: 'run', title: '跑步', description: '' }],
    milestones: [{ id: 'run-2', goal: 'run', title: '跑了两次', afterSessions: 2 }],
    activities: [
      {
        at: '07:00',
        title: '跑步',
        description: '操场',
        durationMinutes: 60,
        goal: 'run',
        beats: [{ at: 0.5, text: '跑完一圈' }],
      },
      { at: '08:00', title: '上课', description: '专业课', durationMinutes: 240 },
      { at: '10:00', title: '开会', description: '社团', durationMinutes: 30 },
    ],
  },
  persona,
);

const HOUR = 3_600_000;
/** Shanghai wall time on 2025-05-13 (+ days). */
const at = (hh: number, mm = 0, day = 0) => new Date(Date.UTC(2025, 4, 13 + day, hh - 8, mm));
const kinds = (plan: ReturnType<typeof planTick>) =>
  plan.changes.map((c) => (c.kind === 'milestone' ? `milestone ${c.milestone.id}` : `${c.kind} ${c.payload.title}`));

describe('life script', () => {
  it('follows the persona routine when the script has no activities, beats spread over the activity', () => {
    const fromRoutine = parseLifeScript({ personaId: 'p' }, persona);
    expect(fromRoutine.activities.map((a) => [a.title, a.beats.map((b) => b.at)])).toEqual([
      ['上课', [0.5]],
      ['睡觉', []],
    ]);
    expect(fromRoutine.mood).toBe('平静');
  });

  it('names every bad field at once', () => {
    expect(() =>
      parseLifeScript(
        { personaId: 'P!', milestones: [{ id: 'm', goal: 'nope', title: 't', afterSessions: 0 }], colour: 'red' },
        persona,
      ),
    ).toThrow(
      /personaId .*milestones\.0\.afterSessions .*property colour should not exist|milestones\.0\.goal names no goal/,
    );
  });

  it('versions the script by content', () => {
    const again = parseLifeScript({ personaId: 'p', activities: [] }, persona);
    expect(again.version).not.toBe(script.version);
    expect(parseLifeScript({ personaId: 'p', activities: [] }, persona).version).toBe(again.version);
  });
});

describe('the life line', () => {
  it('cuts an activity short when the next one starts earlier', () => {
    const day = occurrencesBetween(script, at(7), at(11));
    expect(day.map((o) => [o.activity.title, o.endsAt.toISOString()])).toEqual([
      ['跑步', at(8).toISOString()],
      ['上课', at(10).toISOString()],
      ['开会', at(10, 30).toISOString()],
    ]);
  });

  it('records only what is going on at the first tick, and nothing twice', () => {
    const first = planTick(null, script, at(7, 40), 24 * HOUR);
    expect(kinds(first)).toEqual(['started 跑步', 'beat 跑步']);
    expect(first.agendaChanged).toBe(true);
    const again = planTick(first.next, script, at(7, 40), 24 * HOUR);
    expect(again.changes).toEqual([]);
    expect(again.agendaChanged).toBe(false);
  });

  it('catches up every activity between two ticks, in order, with milestones', () => {
    const first = planTick(null, script, at(7, 10), 24 * HOUR);
    const next = planTick(first.next, script, at(7, 10, 1), 48 * HOUR);
    expect(kinds(next)).toEqual([
      'beat 跑步',
      'completed 跑步',
      'started 上课',
      'completed 上课',
      'started 开会',
      'completed 开会',
      'started 跑步',
    ]);
    const after = planTick(next.next, script, at(8, 5, 1), 48 * HOUR);
    expect(kinds(after)).toEqual(['beat 跑步', 'completed 跑步', 'milestone run-2', 'started 上课']);
    expect(after.next.goalSessions).toEqual({ run: 2 });
  });

  it('passes over what ended before the catch-up horizon, and says how much', () => {
    const first = planTick(null, script, at(7, 10), 24 * HOUR);
    const late = planTick(first.next, script, at(7, 10, 3), 2 * HOUR);
    expect(late.skippedBeyondHorizon).toBeGreaterThan(0);
    // The activity open three days ago is closed at its planned end; today's run starts.
    expect(kinds(late)).toEqual(['completed 跑步', 'started 跑步']);
    expect(late.changes[0]!.at.toISOString()).toBe(at(8).toISOString());
  });

  it('tells phase, next beat and what comes next on each change', () => {
    const plan = planTick(null, script, at(7, 10), HOUR);
    const started = plan.changes[0]!;
    expect(started.kind === 'started' && started.payload).toMatchObject({
      phase: '刚开始',
      nextBeatAt: at(7, 30).toISOString(),
      nextTitle: '上课',
      nextAt: at(8).toISOString(),
      goalId: 'run',
    });
  });

  it('closes an open activity that vanished from an edited script', () => {
    const first = planTick(null, script, at(8, 30), HOUR);
    const edited = parseLifeScript({ personaId: 'p', activities: [] }, persona);
    const plan = planTick(first.next, edited, at(8, 40), HOUR);
    expect(kinds(plan)).toEqual(['completed 上课']);
    expect(plan.next.current).toBeNull();
    expect(plan.agendaChanged).toBe(true);
  });
});

describe('activity details from the utils model', () => {
  it('keeps one short line and refuses what would rewrite the life line', () => {
    expect(validateDetail(JSON.stringify({ detail: '在看一本讲播客剪辑的书' }))).toEqual({
      ok: true,
      detail: '在看一本讲播客剪辑的书',
    });
    expect(validateDetail(JSON.stringify({ detail: '三点要去开会' }))).toMatchObject({ ok: true });
    expect(validateDetail(JSON.stringify({ detail: '15:00 去开会' }))).toMatchObject({ ok: false });
    expect(validateDetail(JSON.stringify({ detail: '作为AI我不能' }))).toMatchObject({ ok: false });
    expect(validateDetail(JSON.stringify({ detail: '短' }))).toMatchObject({ ok: false });
    expect(validateDetail('not json')).toMatchObject({ ok: false });
  });
});
