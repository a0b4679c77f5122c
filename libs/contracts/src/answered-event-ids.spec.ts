import { ANSWERED_EVENT_IDS_MAX, envelopeErrors, EventKind, makeEvent } from './index.js';

const completed = (extra: Record<string, unknown>) =>
  makeEvent({
    kind: EventKind.EpisodeCompleted,
    groupId: '30001',
    source: 'cognition',
    payload: {
      episodeId: 'ep_1',
      triggerEventId: 'e1',
      outcome: 'replied',
      steps: 1,
      tokensIn: 1,
      tokensOut: 1,
      durationMs: 1,
      ...extra,
    },
  });

const send = (extra: Record<string, unknown>) =>
  makeEvent({
    kind: EventKind.ActionSend,
    groupId: '30001',
    source: 'cognition',
    payload: {
      actionId: 'act_ep_1_0',
      episodeId: 'ep_1',
      triggerEventId: 'e1',
      targetType: 'group',
      targetId: '30001',
      text: '好的',
      ...extra,
    },
  });

const paths = (event: unknown) => envelopeErrors(event).map((e) => e.path);

describe('answeredEventIds (what an episode’s replies covered)', () => {
  for (const [kind, build] of [
    ['episode.completed', completed],
    ['action.send', send],
  ] as const) {
    it(`${kind}: optional, so entries written before it stay valid`, () => {
      expect(paths(build({}))).toEqual([]);
    });

    it(`${kind}: a list of event ids, empty when the replies covered none`, () => {
      expect(paths(build({ answeredEventIds: ['e1', 'e2'] }))).toEqual([]);
      expect(paths(build({ answeredEventIds: [] }))).toEqual([]);
    });

    it(`${kind}: rejects anything but a bounded list of strings`, () => {
      expect(paths(build({ answeredEventIds: 'e1' }))).toEqual(['payload.answeredEventIds']);
      expect(paths(build({ answeredEventIds: ['e1', 7] }))).toEqual(['payload.answeredEventIds']);
      const many = Array.from({ length: ANSWERED_EVENT_IDS_MAX + 1 }, (_, i) => `e${i}`);
      expect(paths(build({ answeredEventIds: many }))).toEqual(['payload.answeredEventIds']);
      expect(paths(build({ answeredEventIds: many.slice(1) }))).toEqual([]);
    });
  }
});
