import { episodeIdFor, type EventEnvelope } from '@app/contracts';
import { messagesNeeded } from './event.decider.js';
import {
  completed,
  finalStates,
  fired,
  message,
  ofType,
  repliedCovering,
  Scenario,
  sendAction,
  sentMessage,
  SETTINGS,
  started,
  T0,
} from './decider.fixture.js';
import type { SchedulerEffect } from './group-state.js';

/*
 * An episode that replied answers only what its replies covered (`answeredEventIds`): the chaos run's last
 * silences were @s merged into a running episode by an interrupt committed just after the episode's last look at
 * its control record — it completed `replied` and every subject was marked replied, the late @ too.
 */

const FAST = { ...SETTINGS, debounceDirectMs: 0 };

/** The states `eventId` went through in these effects, with their reasons. */
function trail(effects: SchedulerEffect[], eventId: string): [string, string][] {
  return ofType(effects, 'moved')
    .filter((m) => m.eventId === eventId)
    .flatMap((m) => m.transitions.map((t): [string, string] => [t.to, t.reason]));
}

function decisionOf(effects: SchedulerEffect[], eventId: string) {
  return ofType(effects, 'moved').find((m) => m.eventId === eventId && m.decision)?.decision;
}

/** alice asks; her episode runs; she asks again and the @ is merged into it by an interrupt. */
function interrupted(scenario = new Scenario(undefined, FAST)) {
  const ask = message('alice', '@bot 推荐本书', { direct: 'at' });
  const episodeId = episodeIdFor(ask.id);
  scenario.given(ask, started(episodeId));
  const late = message('alice', '@bot 还有电影呢', { direct: 'at', at: T0 + 2000 });
  scenario.given(late);
  expect(ofType(scenario.all, 'control').map((c) => c.control.command)).toEqual(['interrupt']);
  expect(scenario.state.episodes[episodeId]!.subjects).toEqual([ask.id, late.id]);
  return { s: scenario, ask, late, episodeId };
}

describe('event decider: a replied episode answers what its replies covered', () => {
  it('decides an @ its replies did not cover again, in a new direct episode, and marks only the covered replied', () => {
    const { s, ask, late, episodeId } = interrupted();
    s.given(sendAction(episodeId, { answered: [ask.id], at: T0 + 2500 }));
    const why = `${episodeId} replied without covering it`;
    s.when(repliedCovering(episodeId, [ask.id], T0 + 3000)).then((effects, state) => {
      expect(trail(effects, late.id)).toEqual([
        ['snoozed', `redecided: ${why}`],
        ['scheduled', `redecided: ${why}`],
        ['eligible', `deliberate: @了机器人 (forced) (decided again: ${why})`],
      ]);
      const [offer] = ofType(effects, 'episodeOffered');
      expect(offer!.episode.id).toBe(`${episodeIdFor(late.id)}-again1`);
      expect(offer!.job).toMatchObject({
        mode: 'start',
        lane: 'direct',
        priority: 0,
        triggerEventId: late.id,
        fragmentIds: [],
      });
      expect(decisionOf(effects, late.id)).toMatchObject({ outcome: 'deliberate', episodeId: offer!.episode.id });
      // The covered @ waits for its reply's delivery.
      expect(trail(effects, ask.id)).toEqual([]);
      expect(state.episodes[episodeId]).toMatchObject({ status: 'replied', subjects: [ask.id] });
    });
    s.when(sentMessage(episodeId, { at: T0 + 3500 })).then((effects, state) => {
      expect(finalStates(effects)).toEqual({ [ask.id]: 'replied' });
      expect(state.episodes[episodeId]).toBeUndefined();
      expect(state.events[late.id]?.state).toBe('eligible');
    });
  });

  it('without answeredEventIds (entries from before them) every subject is replied, as before', () => {
    const { s, ask, late, episodeId } = interrupted();
    s.given(sendAction(episodeId), completed(episodeId, 'replied', T0 + 3000));
    expect(ofType(s.all, 'episodeOffered')).toHaveLength(1);
    s.when(sentMessage(episodeId, { at: T0 + 3500 })).then((effects, state) => {
      expect(finalStates(effects)).toEqual({ [ask.id]: 'replied', [late.id]: 'replied' });
      expect(ofType(effects, 'episodeOffered')).toEqual([]);
      expect(state.episodes).toEqual({});
    });
  });

  it('message.sent before episode.completed: the covered are replied at once, the rest decided when it completes', () => {
    const { s, ask, late, episodeId } = interrupted();
    s.given(sendAction(episodeId, { answered: [ask.id], at: T0 + 2500 }));
    s.when(sentMessage(episodeId, { at: T0 + 2600 })).then((effects, state) => {
      expect(finalStates(effects)).toEqual({ [ask.id]: 'replied' });
      // It may still reply to the late @ (it goes on after a reply): neither replied nor decided again yet.
      expect(state.episodes[episodeId]).toMatchObject({ status: 'running', delivered: true });
      expect(state.events[late.id]?.state).toBe('deliberating');
      expect(ofType(effects, 'episodeOffered')).toEqual([]);
      expect(ofType(effects, 'actor')[0]?.reason).toBe(`replied to alice in ${state.events[late.id]!.thread}`);
    });
    s.when(repliedCovering(episodeId, [ask.id], T0 + 3000)).then((effects, state) => {
      expect(ofType(effects, 'episodeOffered').map((o) => o.job.triggerEventId)).toEqual([late.id]);
      // Nothing of it is left to deliver: it ends here.
      expect(state.episodes[episodeId]).toBeUndefined();
      expect(ofType(effects, 'episodeEnded').map((e) => e.episodeId)).toEqual([episodeId]);
    });
  });

  it('message.sent before episode.completed, and the episode goes on to answer the late @ itself', () => {
    const { s, ask, late, episodeId } = interrupted();
    s.given(
      sendAction(episodeId, { step: 0, answered: [ask.id], at: T0 + 2500 }),
      sentMessage(episodeId, { step: 0, at: T0 + 2600 }),
      sendAction(episodeId, { step: 1, answered: [ask.id, late.id], at: T0 + 4000 }),
    );
    s.when(repliedCovering(episodeId, [ask.id, late.id], T0 + 4000)).then((effects, state) => {
      expect(effects.filter((e) => e.type !== 'released')).toEqual([
        { type: 'episodeUpdated', episode: expect.objectContaining({ status: 'replied' }) },
      ]);
      expect(state.events[late.id]?.state).toBe('deliberating');
    });
    s.when(sentMessage(episodeId, { step: 1, at: T0 + 4500 })).then((effects, state) => {
      expect(finalStates(effects)).toEqual({ [late.id]: 'replied' });
      expect(state.episodes).toEqual({});
      // The group actor counted the episode's reply once, at its first delivery.
      expect(ofType(effects, 'actor')).toEqual([]);
    });
    expect(ofType(s.all, 'episodeOffered')).toHaveLength(1);
  });

  it('changes nothing more when the same completion, send or delivery comes again', () => {
    const { s, ask, late, episodeId } = interrupted();
    const send = sendAction(episodeId, { answered: [ask.id], at: T0 + 2500 });
    const done = repliedCovering(episodeId, [ask.id], T0 + 3000);
    s.given(send);
    s.when(send).then((effects) => expect(effects).toEqual([]));
    s.given(done);
    const before = s.state;
    s.when(done).then((effects, state) => {
      expect(effects.map((e) => e.type)).toEqual(['released']);
      expect(state).toEqual(before);
    });
    const sent = sentMessage(episodeId, { at: T0 + 3500 });
    s.given(sent);
    s.when(sent).then((effects) => expect(effects).toEqual([]));
    s.when(done).then((effects) => expect(effects.map((e) => e.type)).toEqual(['released']));
    expect(ofType(s.all, 'episodeOffered').filter((o) => o.job.triggerEventId === late.id)).toHaveLength(1);
  });

  it('an uncovered message that is not addressed to the bot goes back to attention, which may skip it', () => {
    const s = new Scenario(undefined, FAST);
    const ask = message('alice', '@bot 推荐本书', { direct: 'at' });
    const episodeId = episodeIdFor(ask.id);
    const more = message('alice', '要科幻的', { at: T0 + 2000 });
    s.given(ask, started(episodeId), more, sendAction(episodeId, { answered: [ask.id] }));
    s.when(repliedCovering(episodeId, [ask.id], T0 + 3000)).then((effects) => {
      expect(finalStates(effects)).toEqual({ [more.id]: 'skipped' });
      expect(decisionOf(effects, more.id)?.reason).toBe(
        `skipped: not addressed to the bot; ambient attention is not enabled (decided again: ${episodeId} replied without covering it)`,
      );
      expect(ofType(effects, 'episodeOffered')).toEqual([]);
    });
  });

  it('decides an event again only once: a second episode replying without it counts it replied', () => {
    const { s, ask, late, episodeId } = interrupted();
    s.given(sendAction(episodeId, { answered: [ask.id] }), repliedCovering(episodeId, [ask.id], T0 + 3000));
    const second = `${episodeIdFor(late.id)}-again1`;
    expect(s.state.episodes[second]?.subjects).toEqual([late.id]);
    // It sent a sticker only: its replies named no message.
    s.given(started(second, T0 + 3100), sendAction(second, { answered: [], at: T0 + 3200 }));
    s.when(repliedCovering(second, [], T0 + 3300)).then((effects) => {
      expect(trail(effects, late.id)).toEqual([
        ['replied', `replied: ${second} replied without covering it, and it was decided again already`],
      ]);
      expect(ofType(effects, 'episodeOffered')).toEqual([]);
    });
  });

  it('decides again the subjects beyond the 32 fragments a job carries, instead of marking them replied', () => {
    const s = new Scenario(undefined, { ...FAST, maxInterrupts: 0 });
    // Forty @s in a row: each supersedes the episode before it, which carries all of them on.
    const asks = Array.from({ length: 40 }, (_, i) =>
      message('alice', `@bot 第${i + 1}个问题`, { direct: 'at', at: T0 + i * 10 }),
    );
    s.given(...asks);
    const last = asks[asks.length - 1]!;
    const episodeId = episodeIdFor(last.id);
    expect(s.state.episodes[episodeId]!.subjects).toHaveLength(40);
    const job = ofType(s.all, 'episodeOffered').find((o) => o.episode.id === episodeId)!.job;
    expect(job.fragmentIds).toEqual(asks.slice(7, 39).map((a) => a.id));
    // What cognition saw, and covered: the trigger and the fragments its job carried.
    const answered = [last.id, ...job.fragmentIds];
    s.given(started(episodeId, T0 + 1000), sendAction(episodeId, { answered, at: T0 + 1500 }));
    const unseen = asks.slice(0, 7).map((a) => a.id);
    s.when(repliedCovering(episodeId, answered, T0 + 2000)).then((effects) => {
      const [offer] = ofType(effects, 'episodeOffered');
      expect(offer!.episode.subjects).toEqual(unseen);
      expect(offer!.job).toMatchObject({ lane: 'direct', triggerEventId: unseen[6], fragmentIds: unseen.slice(0, 6) });
    });
    s.when(sentMessage(episodeId, { at: T0 + 2500 })).then((effects) => {
      const states = finalStates(effects);
      expect(Object.keys(states).sort()).toEqual([...answered].sort());
      expect(new Set(Object.values(states))).toEqual(new Set(['replied']));
    });
  });

  it('a delivered episode that never completes: at its deadline what it did not cover expires', () => {
    const { s, ask, late, episodeId } = interrupted();
    s.given(sendAction(episodeId, { answered: [ask.id] }), sentMessage(episodeId, { at: T0 + 2600 }));
    const deadline = ofType(s.all, 'timerSet').find((t) => t.timer.timerId === `deadline:${episodeId}`)!.timer;
    s.when(fired(deadline)).then((effects, state) => {
      expect(trail(effects, late.id)).toEqual([
        ['expired', `expired: ${episodeId} replied but did not get to it before the deadline`],
      ]);
      expect(state.episodes[episodeId]).toBeUndefined();
    });
  });

  it('loads the held messages a completion decides again (for attention and the new job)', () => {
    const { s, ask, late, episodeId } = interrupted();
    s.given(sendAction(episodeId, { answered: [ask.id] }));
    const needed = (event: EventEnvelope) => messagesNeeded(event, s.state, SETTINGS.threads, T0 + 3000);
    expect(needed(repliedCovering(episodeId, [ask.id]))).toEqual(expect.arrayContaining([late.id]));
    expect(needed(repliedCovering(episodeId, [ask.id, late.id]))).toEqual([]);
    expect(needed(completed(episodeId, 'replied'))).toEqual([]);
  });
});
