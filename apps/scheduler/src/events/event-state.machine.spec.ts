import { QunliError } from '@app/contracts';
import { ALLOWED_TRANSITIONS, EventRecord, isTerminal } from './event-state.machine.js';

describe('event state machine', () => {
  it('walks the allowed path and records an audit trail with increasing seq', () => {
    const record = new EventRecord('e1').through(['classified', 'linked', 'scheduled', 'eligible'], 'direct');
    record.transition('deliberating', 'episode dispatched');
    expect(record.state).toBe('deliberating');
    expect(record.trail.map((t) => [t.seq, t.from, t.to, t.forced])).toEqual([
      [1, 'captured', 'classified', false],
      [2, 'classified', 'linked', false],
      [3, 'linked', 'scheduled', false],
      [4, 'scheduled', 'eligible', false],
      [5, 'eligible', 'deliberating', false],
    ]);
  });

  it('refuses an illegal transition with a stable code and leaves the state as it was', () => {
    const record = new EventRecord('e2');
    expect(() => record.transition('replied', 'too early')).toThrow(QunliError);
    try {
      record.transition('replied', 'too early');
    } catch (error) {
      expect((error as QunliError).code).toBe('EVENT.ILLEGAL_TRANSITION');
      expect((error as QunliError).details).toMatchObject({ from: 'captured', to: 'replied' });
    }
    expect(record.state).toBe('captured');
    expect(record.trail).toEqual([]);
  });

  it('continues the numbering of a record loaded mid-way and marks forced moves', () => {
    const record = new EventRecord('e3', 'deliberating', 6).force('snoozed', 'operator snoozed');
    expect(record.trail).toEqual([
      { seq: 7, from: 'deliberating', to: 'snoozed', reason: 'operator snoozed', forced: true },
    ]);
  });

  it('has no way out of a terminal state', () => {
    for (const state of ['replied', 'skipped', 'expired'] as const) {
      expect(isTerminal(state)).toBe(true);
      expect(ALLOWED_TRANSITIONS[state]).toEqual([]);
    }
    expect(isTerminal('deliberating')).toBe(false);
  });
});
