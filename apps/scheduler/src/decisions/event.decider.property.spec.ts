import fc from 'fast-check';
import { EventKind, type EventEnvelope, type EventState } from '@app/contracts';
import { ALLOWED_TRANSITIONS, isTerminal } from '../events/event-state.machine.js';
import { directFeatures, forcedOnlyAttention, type AttentionPolicy } from './attention.policy.js';
import { completed, fact, fired, message, ofType, Scenario, SETTINGS, started, T0 } from './decider.fixture.js';
import { evolve } from './event.decider.js';

/** Random attention: deliberates, snoozes or skips depending on the text length (deterministic per input). */
const mixed: AttentionPolicy = {
  considersAmbient: true,
  judge: (input) => {
    const features = directFeatures(input);
    if (input.direct) return { outcome: 'deliberate', reason: 'deliberate: forced', features };
    const n = features.textLength! % 3;
    if (n === 0) return { outcome: 'deliberate', reason: 'deliberate: attention high', features };
    if (n === 1)
      return { outcome: 'snooze', reason: 'snoozed: attention middling', features, snoozeUntil: input.now + 5000 };
    return { outcome: 'skip', reason: 'skipped: attention low', features };
  },
};

type Op =
  | { op: 'message'; sender: number; text: string; direct: boolean; notBefore: boolean; deadline: boolean }
  | { op: 'fireTimer'; pick: number }
  | { op: 'start'; pick: number }
  | { op: 'act'; pick: number; cover: number | null }
  | {
      op: 'complete';
      pick: number;
      outcome: 'replied' | 'no_reply' | 'failed' | 'cancelled' | 'superseded';
      cover: number | null;
    }
  | { op: 'wait'; pick: number; tool: boolean }
  | { op: 'sent'; pick: number }
  | { op: 'recall'; pick: number }
  | { op: 'advance'; ms: number };

/** What the replies covered, as a mask over the episode's subjects; null: not named (an older cognition). */
const cover = fc.option(fc.nat(), { nil: null });

const ops: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant('message' as const),
    sender: fc.integer({ min: 0, max: 3 }),
    text: fc.string({ minLength: 1, maxLength: 6 }),
    direct: fc.boolean(),
    notBefore: fc.boolean(),
    deadline: fc.boolean(),
  }),
  fc.record({ op: fc.constant('fireTimer' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('start' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('act' as const), pick: fc.nat(), cover }),
  fc.record({
    op: fc.constant('complete' as const),
    pick: fc.nat(),
    outcome: fc.constantFrom('replied', 'no_reply', 'failed', 'cancelled', 'superseded'),
    cover,
  }),
  fc.record({ op: fc.constant('wait' as const), pick: fc.nat(), tool: fc.boolean() }),
  fc.record({ op: fc.constant('sent' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('recall' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 120_000 }) }),
);

/**
 * Busy senders and episodes that reply, covering some of what they hold: the paths where a reply's delivery and
 * its completion come in either order and what it did not cover is decided again.
 */
const replyOps: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('message' as const),
      sender: fc.integer({ min: 0, max: 1 }),
      text: fc.string({ minLength: 1, maxLength: 6 }),
      direct: fc.boolean(),
      notBefore: fc.constant(false),
      deadline: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('fireTimer' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('start' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('act' as const), pick: fc.nat(), cover }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('complete' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom('replied', 'replied', 'replied', 'no_reply', 'failed'),
      cover,
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('sent' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 20_000 }) }) },
);

function pickOf<T>(list: T[], n: number): T | undefined {
  return list.length === 0 ? undefined : list[n % list.length];
}

/** The subjects `mask` picks (bit i, subject i), or nothing named. */
function coverOf(subjects: string[], mask: number | null): { answeredEventIds?: string[] } {
  return mask === null ? {} : { answeredEventIds: subjects.filter((_, i) => ((mask >> i) & 1) === 1) };
}

/** Play random inputs against the decider, the way the log could deliver them. */
function play(attention: AttentionPolicy, sequence: Op[], record = false): Scenario {
  const s = new Scenario(attention, { ...SETTINGS, maxInterrupts: 1 });
  if (record) s.recordTurns();
  let now = T0;
  const timers = () =>
    ofType(s.all, 'timerSet')
      .map((t) => t.timer)
      .filter((t) => s.state.timers[t.timerId]?.dueAt === t.dueAt);
  const episodes = () => Object.values(s.state.episodes);
  const messages: EventEnvelope[] = [];
  for (const step of sequence) {
    switch (step.op) {
      case 'message': {
        const m = message(`u${step.sender}`, step.text, {
          at: now,
          ...(step.direct ? { direct: 'at' as const } : {}),
          ...(step.notBefore ? { notBefore: now + 10_000 } : {}),
          ...(step.deadline ? { deadline: now + 30_000 } : {}),
        });
        messages.push(m);
        s.run({ event: m, at: now });
        break;
      }
      case 'fireTimer': {
        const timer = pickOf(timers(), step.pick);
        if (timer) {
          now = Math.max(now, timer.dueAt);
          s.run({ event: fired(timer, now), at: now });
        }
        break;
      }
      case 'start': {
        const e = pickOf(episodes(), step.pick);
        if (e) s.run({ event: started(e.id, now), at: now });
        break;
      }
      case 'act': {
        const e = pickOf(episodes(), step.pick);
        if (e) {
          s.run({
            event: fact(EventKind.ActionSend, {
              actionId: `act_${e.id}`,
              episodeId: e.id,
              triggerEventId: e.triggerEventId,
              targetType: 'group',
              targetId: '40001',
              text: 'x',
              ...coverOf(e.subjects, step.cover),
            }),
            at: now,
          });
        }
        break;
      }
      case 'complete': {
        const e = pickOf(episodes(), step.pick);
        if (e) {
          const error = step.outcome === 'failed' ? { code: 'LLM.TIMEOUT', message: 'slow' } : undefined;
          const answered = coverOf(e.subjects, step.cover).answeredEventIds;
          s.run({ event: completed(e.id, step.outcome, now, error, answered), at: now });
        }
        break;
      }
      case 'wait': {
        const e = pickOf(episodes(), step.pick);
        if (e) {
          s.run({
            event: fact(EventKind.EpisodeWaiting, {
              episodeId: e.id,
              triggerEventId: e.triggerEventId,
              cause: step.tool ? 'tool' : 'wait',
              step: 1,
              ...(step.tool
                ? { toolCallId: 'c1', timeoutAt: new Date(now + 5000).toISOString() }
                : { resumeAt: new Date(now + 5000).toISOString() }),
              deadline: new Date(e.deadlineAt).toISOString(),
            }),
            at: now,
          });
        }
        break;
      }
      case 'sent': {
        const e = pickOf(episodes(), step.pick);
        if (e) {
          s.run({
            event: fact(EventKind.MessageSent, {
              actionId: `act_${e.id}`,
              episodeId: e.id,
              triggerEventId: e.triggerEventId,
              targetType: 'group',
              targetId: '40001',
              segmentIndex: 0,
              segmentCount: 1,
              text: 'x',
              attempts: 1,
              onebotMessageId: '1',
            }),
            at: now,
          });
        }
        break;
      }
      case 'recall': {
        const m = pickOf(messages, step.pick) as EventEnvelope<{ messageId: string; sender: { userId: string } }>;
        if (m) {
          s.run({
            event: fact(EventKind.MessageRecalled, {
              messageType: 'group',
              selfId: '10001',
              messageId: m.payload.messageId,
              userId: m.payload.sender.userId,
              operatorId: m.payload.sender.userId,
              recalledAt: 1,
            }),
            at: now,
          });
        }
        break;
      }
      case 'advance':
        now += step.ms;
        break;
    }
  }
  return s;
}

/** Every transition allowed, in order, with a reason; nothing leaves a terminal state; decisions say their outcome. */
function expectLawfulMoves(s: Scenario): void {
  const at = new Map<string, { state: EventState; seq: number }>();
  for (const moved of ofType(s.all, 'moved')) {
    for (const t of moved.transitions) {
      const before = at.get(moved.eventId) ?? { state: 'captured' as EventState, seq: 0 };
      expect(isTerminal(before.state)).toBe(false);
      expect(t.from).toBe(before.state);
      expect(t.seq).toBe(before.seq + 1);
      expect(t.forced).toBe(false);
      expect(ALLOWED_TRANSITIONS[t.from]).toContain(t.to);
      expect(t.reason.length).toBeGreaterThan(0);
      expect(t.by).toBe('scheduler');
      at.set(moved.eventId, { state: t.to, seq: t.seq });
    }
    if (moved.decision) expect(moved.decision.reason).toMatch(/^(deliberate|skipped|snoozed|expired): /);
  }
}

/** An event an episode took (eligible, deliberating) is the subject of an episode the group still holds. */
function expectNoOrphans(s: Scenario): void {
  const subjects = new Set(Object.values(s.state.episodes).flatMap((e) => e.subjects));
  for (const t of Object.values(s.state.events)) {
    if (t.state === 'eligible' || t.state === 'deliberating') expect(subjects.has(t.id)).toBe(true);
  }
}

describe('event decider properties', () => {
  it('a turn folds its effects like evolve, effect by effect, and leaves the state it started from untouched', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(ops, replyOps), { minLength: 5, maxLength: 60 }), (sequence) => {
        const s = play(mixed, sequence, true);
        for (const turn of s.turns!) {
          expect(turn.before).toEqual(turn.copy);
          expect(turn.after).toEqual(turn.effects.reduce(evolve, turn.copy));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('replies covering part of their episode: moves stay lawful, nothing is left without an episode', () => {
    let redecided = 0;
    fc.assert(
      fc.property(fc.array(replyOps, { minLength: 10, maxLength: 60 }), (sequence) => {
        const s = play(forcedOnlyAttention, sequence);
        expectLawfulMoves(s);
        expectNoOrphans(s);
        if (ofType(s.all, 'moved').some((m) => m.transitions.some((t) => t.reason.startsWith('redecided: '))))
          redecided++;
      }),
      {
        numRuns: 300,
        // Found by this property: an action naming what it covered after a completion that named nothing.
        examples: [
          [
            [
              { op: 'message', sender: 0, text: ' ', direct: true, notBefore: false, deadline: false },
              { op: 'advance', ms: 800 },
              { op: 'message', sender: 0, text: ' ', direct: false, notBefore: false, deadline: false },
              { op: 'complete', pick: 0, outcome: 'replied', cover: null },
              { op: 'start', pick: 0 },
              { op: 'act', pick: 0, cover: 0 },
              { op: 'sent', pick: 0 },
            ],
          ],
        ],
      },
    );
    // The property is about the paths where something is decided again: they must have been taken.
    expect(redecided).toBeGreaterThan(5);
  });

  for (const [name, attention] of [
    ['forced-only attention', forcedOnlyAttention],
    ['mixed attention', mixed],
  ] as const) {
    it(`${name}: every transition is allowed, nothing leaves a terminal state, every decision has a reason`, () => {
      fc.assert(
        fc.property(fc.array(ops, { maxLength: 60 }), (sequence) => {
          expectLawfulMoves(play(attention, sequence));
        }),
        { numRuns: 300 },
      );
    });

    it(`${name}: control commands of an episode count 2, 3, 4… and nothing is sent to a stopped episode`, () => {
      fc.assert(
        fc.property(fc.array(ops, { maxLength: 60 }), (sequence) => {
          const s = play(attention, sequence);
          const seqs = new Map<string, number>();
          const stopped = new Set<string>();
          for (const { control } of ofType(s.all, 'control')) {
            expect(stopped.has(control.episodeId)).toBe(false);
            expect(control.seq).toBe((seqs.get(control.episodeId) ?? 1) + 1);
            seqs.set(control.episodeId, control.seq);
            if (control.command === 'cancel' || control.command === 'supersede') stopped.add(control.episodeId);
          }
        }),
        { numRuns: 300 },
      );
    });

    it(`${name}: an event is decided at most once and tracked events are exactly the live ones`, () => {
      fc.assert(
        fc.property(fc.array(ops, { maxLength: 60 }), (sequence) => {
          const s = play(attention, sequence);
          const last = new Map<string, EventState>();
          for (const moved of ofType(s.all, 'moved')) {
            last.set(moved.eventId, moved.transitions[moved.transitions.length - 1]!.to);
          }
          for (const [id, state] of last) {
            if (isTerminal(state)) expect(s.state.events[id]).toBeUndefined();
            else expect(s.state.events[id]?.state).toBe(state);
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});
