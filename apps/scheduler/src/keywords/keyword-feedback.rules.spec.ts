import type { DecisionKeywordHit } from '@app/contracts';
import { emptyFeedback, followFeedback, type FeedbackInput, type FeedbackState } from './keyword-feedback.rules.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');
const MIN = 60_000;
const hit: DecisionKeywordHit = { termId: 'kt_1', term: '原神', scope: 'group', weight: 0.4 };

function run(steps: [number, FeedbackInput][]) {
  let state: FeedbackState = emptyFeedback();
  const signals: string[] = [];
  for (const [at, input] of steps) {
    const out = followFeedback(state, input, T0 + at);
    state = out.state;
    signals.push(...out.outcomes.map((o) => `${o.signal}:${o.hits.map((h) => h.term).join(',')}`));
  }
  return { state, signals };
}

const asked: [number, FeedbackInput][] = [
  [0, { type: 'message', eventId: 'm1', senderId: 'alice' }],
  [0, { type: 'decision', subjectEventId: 'm1', outcome: 'deliberate', hits: [hit] }],
];

describe('keyword feedback', () => {
  it('is engaged when the person follows up after the reply', () => {
    const { signals, state } = run([
      ...asked,
      [MIN, { type: 'replied', triggerEventId: 'm1' }],
      [2 * MIN, { type: 'message', eventId: 'm2', senderId: 'bob' }],
      [3 * MIN, { type: 'message', eventId: 'm3', senderId: 'alice' }],
    ]);
    expect(signals).toEqual(['engaged:原神']);
    expect(state.pending).toEqual({});
  });

  it('is ignored when nobody follows up within the window, once', () => {
    const { signals } = run([
      ...asked,
      [MIN, { type: 'completed', triggerEventId: 'm1', outcome: 'replied' }],
      [30 * MIN, { type: 'message', eventId: 'm2', senderId: 'alice' }],
      [31 * MIN, { type: 'message', eventId: 'm3', senderId: 'alice' }],
    ]);
    expect(signals).toEqual(['ignored:原神']);
  });

  it('is unanswered when the episode chose not to reply; cancelled episodes say nothing', () => {
    expect(run([...asked, [MIN, { type: 'completed', triggerEventId: 'm1', outcome: 'no_reply' }]]).signals).toEqual([
      'unanswered:原神',
    ]);
    expect(run([...asked, [MIN, { type: 'completed', triggerEventId: 'm1', outcome: 'cancelled' }]]).signals).toEqual(
      [],
    );
  });

  it('follows only decisions that deliberated on keyword hits', () => {
    const { state } = run([
      [0, { type: 'message', eventId: 'm1', senderId: 'alice' }],
      [0, { type: 'decision', subjectEventId: 'm1', outcome: 'skip', hits: [hit] }],
      [0, { type: 'message', eventId: 'm2', senderId: 'alice' }],
      [0, { type: 'decision', subjectEventId: 'm2', outcome: 'deliberate', hits: [] }],
    ]);
    expect(state.pending).toEqual({});
  });

  it('a reply counted twice (action.send, then episode.completed) still gives one signal', () => {
    const { signals } = run([
      ...asked,
      [MIN, { type: 'replied', triggerEventId: 'm1' }],
      [MIN, { type: 'completed', triggerEventId: 'm1', outcome: 'replied' }],
      [2 * MIN, { type: 'message', eventId: 'm2', senderId: 'alice' }],
    ]);
    expect(signals).toEqual(['engaged:原神']);
  });
});
