import fc from 'fast-check';
import { EVENT_STATES, QunliError, type EventState } from '@app/contracts';
import { ALLOWED_TRANSITIONS, EventRecord, isTerminal, pathTo } from './event-state.machine.js';

const states = fc.constantFrom(...EVENT_STATES);
const attempts = fc.array(fc.record({ to: states, force: fc.boolean() }), { maxLength: 40 });

describe('event state machine properties', () => {
  it('no sequence of transition() and force() leaves a terminal state or records an illegal unforced move', () => {
    fc.assert(
      fc.property(attempts, (tries) => {
        const record = new EventRecord('e', 'captured', 0, { by: 'test', at: new Date(0) });
        for (const { to, force } of tries) {
          const before = record.state;
          try {
            if (force) record.force(to, 'forced');
            else record.transition(to, 'moved');
          } catch (error) {
            expect(error).toBeInstanceOf(QunliError);
            expect(record.state).toBe(before);
          }
        }
        let reachedTerminal = false;
        record.trail.forEach((t, i) => {
          expect(reachedTerminal).toBe(false);
          expect(t.seq).toBe(i + 1);
          if (!t.forced) expect(ALLOWED_TRANSITIONS[t.from]).toContain(t.to);
          expect(t).toMatchObject({ by: 'test', at: new Date(0).toISOString() });
          if (isTerminal(t.to)) reachedTerminal = true;
        });
      }),
    );
  });

  it('reach() walks only allowed moves and lands where it was sent', () => {
    fc.assert(
      fc.property(states, states, (from, to) => {
        const path = pathTo(from, to);
        if (!path) return;
        const record = new EventRecord('e', from);
        record.through(path, 'walk');
        expect(record.state).toBe(to);
        let at: EventState = from;
        for (const step of path) {
          expect(ALLOWED_TRANSITIONS[at]).toContain(step);
          at = step;
        }
      }),
    );
  });

  it('every live state can still reach every outcome', () => {
    for (const state of EVENT_STATES.filter((s) => !isTerminal(s))) {
      for (const outcome of ['skipped', 'expired'] as const) expect(pathTo(state, outcome)).toBeDefined();
    }
    expect(pathTo('captured', 'replied')).toEqual([
      'classified',
      'linked',
      'scheduled',
      'eligible',
      'deliberating',
      'replied',
    ]);
  });
});
