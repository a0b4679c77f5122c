import { EventKind, episodeIdFor, episodeJobId } from '@app/contracts';
import { directFeatures, type AttentionPolicy } from './attention.policy.js';
import {
  completed,
  fact,
  finalStates,
  fired,
  message,
  ofType,
  Scenario,
  SETTINGS,
  started,
  T0,
} from './decider.fixture.js';
import { react } from './event.decider.js';

/** An attention double that deliberates on every ambient batch (as issue 7's scorer may). */
const curious: AttentionPolicy = {
  considersAmbient: true,
  judge: (input) => ({
    outcome: 'deliberate',
    reason: input.direct ? 'deliberate: addressed (forced)' : 'deliberate: attention 0.9 ≥ 0.55',
    features: directFeatures(input),
  }),
};

/** Cognition's word that `episodeId` waits (`cause: 'wait'`) until `resumeAt`, within `deadline` (product ms). */
const parked = (episodeId: string, triggerEventId: string, resumeAt: number, deadline: number) =>
  fact(EventKind.EpisodeWaiting, {
    episodeId,
    triggerEventId,
    cause: 'wait',
    step: 1,
    resumeAt: new Date(resumeAt).toISOString(),
    deadline: new Date(deadline).toISOString(),
  });

/** Timers about events and episodes (a thread's idle timer is the thread's, not the event's). */
const eventTimers = (effects: Parameters<typeof ofType>[0]) =>
  ofType(effects, 'timerSet').filter((t) => t.timer.purpose !== 'thread_idle');

describe('event decider', () => {
  it('records and skips an ambient message at once, with a reason', () => {
    const ambient = message('alice', '今天好热');
    new Scenario().when(ambient).then((effects, state) => {
      const moves = ofType(effects, 'moved');
      expect(moves.flatMap((m) => m.transitions.map((t) => t.to))).toEqual(['classified', 'linked', 'skipped']);
      expect(moves[moves.length - 1]!.decision).toMatchObject({
        outcome: 'skip',
        reason: 'skipped: not addressed to the bot; ambient attention is not enabled',
      });
      expect(eventTimers(effects)).toEqual([]);
      expect(state.events).toEqual({});
    });
  });

  it('debounces an @ for at most the direct wait, then offers one episode', () => {
    const s = new Scenario();
    const ask = message('alice', '在吗', { direct: 'at', at: T0 });
    s.when(ask).then((effects) => {
      expect(finalStates(effects)).toEqual({ [ask.id]: 'scheduled' });
      expect(eventTimers(effects).map((t) => [t.timer.purpose, t.timer.dueAt - T0])).toEqual([['debounce', 800]]);
    });
    s.when(fired(s.timer('debounce'))).then((effects) => {
      const [offer] = ofType(effects, 'episodeOffered');
      expect(offer!.job).toMatchObject({ mode: 'start', lane: 'direct', triggerEventId: ask.id, fragmentIds: [] });
      expect(offer!.episode.id).toBe(episodeIdFor(ask.id));
      expect(finalStates(effects)[ask.id]).toBe('eligible');
      expect(ofType(effects, 'moved').find((m) => m.decision)?.decision?.reason).toBe('deliberate: @了机器人 (forced)');
    });
  });

  it('merges one sender’s fragments into one decision and one episode', () => {
    const s = new Scenario();
    const first = message('alice', '@bot 问个事', { direct: 'at', at: T0 });
    const second = message('alice', '就是那个', { at: T0 + 300 });
    const third = message('alice', '报销怎么弄', { at: T0 + 600 });
    s.given(first, second, third);
    expect(s.timer('debounce').dueAt).toBe(T0 + 800);
    s.when(fired(s.timer('debounce'))).then((effects) => {
      const offers = ofType(effects, 'episodeOffered');
      expect(offers).toHaveLength(1);
      expect(offers[0]!.job).toMatchObject({ triggerEventId: third.id, fragmentIds: [first.id, second.id] });
      const decided = ofType(effects, 'moved').filter((m) => m.decision);
      expect(decided.map((m) => m.eventId).sort()).toEqual([first.id, second.id, third.id].sort());
      expect(new Set(decided.map((m) => m.decision!.episodeId))).toEqual(new Set([episodeIdFor(third.id)]));
    });
  });

  it('never merges different senders', () => {
    const s = new Scenario();
    const a = message('alice', '@bot 你好', { direct: 'at', at: T0 });
    const b = message('bob', '@bot 我也问', { direct: 'at', at: T0 + 100 });
    s.given(a, b);
    const timers = ofType(s.all, 'timerSet').filter((t) => t.timer.purpose === 'debounce');
    expect(timers.map((t) => t.timer.subjectEventId)).toEqual([a.id, b.id]);
    for (const t of timers) s.run(fired(t.timer));
    const offers = ofType(s.all, 'episodeOffered');
    expect(offers.map((o) => [o.job.triggerEventId, o.job.fragmentIds])).toEqual([
      [a.id, []],
      [b.id, []],
    ]);
  });

  it('marks urgent the timers someone who addressed the bot waits on, and no others', () => {
    const urgency = (s: Scenario, purpose: Parameters<Scenario['timer']>[0]) => s.timer(purpose).urgent === true;
    // A sender's ambient batch debounces as ordinary work until an @ of theirs joins it.
    const chat = new Scenario(curious);
    chat.given(message('alice', '今天好热', { at: T0 }));
    expect(urgency(chat, 'debounce')).toBe(false);
    expect(urgency(chat, 'thread_idle')).toBe(false);
    chat.given(message('alice', '@bot 你觉得呢', { direct: 'at', at: T0 + 300 }));
    expect(urgency(chat, 'debounce')).toBe(true);
    // An @ held until its not-before: that timer is urgent, its deadline is not.
    const later = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    later.given(
      message('bob', '@bot 十分钟后提醒我', { direct: 'at', notBefore: T0 + 600_000, deadline: T0 + 900_000 }),
    );
    expect([urgency(later, 'not_before'), urgency(later, 'deadline')]).toEqual([true, false]);
    // A direct episode's resume after a wait and its retry after a failure.
    const episodes = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const ask = message('carol', '@bot 等我查一下', { direct: 'at' });
    const episodeId = episodeIdFor(ask.id);
    episodes.given(ask, started(episodeId), parked(episodeId, ask.id, T0 + 30_000, T0 + 60_000));
    expect(urgency(episodes, 'episode_wait')).toBe(true);
    const failing = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const hi = message('dave', '@bot hi', { direct: 'at' });
    failing.given(hi, started(episodeIdFor(hi.id)));
    failing.run(completed(episodeIdFor(hi.id), 'failed', T0 + 1000, { code: 'LLM.TIMEOUT', message: 'slow' }));
    expect(urgency(failing, 'retry')).toBe(true);
  });

  it('decides an @ at once when the direct wait is 0', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    s.when(message('alice', '@bot 快', { direct: 'at' })).then((effects) => {
      expect(ofType(effects, 'episodeOffered')).toHaveLength(1);
      expect(eventTimers(effects).map((t) => t.timer.purpose)).toEqual(['deadline']);
    });
  });

  it('decides an ambient message read long after it was sent in that turn, without a debounce wait', () => {
    const s = new Scenario(curious);
    const stale = message('alice', '有人玩原神吗', { at: T0 });
    s.when({ event: stale, at: T0 + 3500 }).then((effects) => {
      const scheduled = ofType(effects, 'moved')
        .flatMap((m) => m.transitions)
        .find((t) => t.to === 'scheduled');
      expect(scheduled!.reason).toBe(
        'scheduled: read 3.5 s after it was sent (the scheduler is behind) — decided without waiting for more fragments',
      );
      expect(finalStates(effects)[stale.id]).toBe('eligible');
      expect(ofType(effects, 'episodeOffered')).toHaveLength(1);
      expect(eventTimers(effects).map((t) => t.timer.purpose)).toEqual(['deadline']);
    });
    // Read within the limit, or with the limit off, it waits for its sender as before.
    for (const [settings, at] of [
      [SETTINGS, T0 + 1500],
      [{ ...SETTINGS, ambientLateMs: 0 }, T0 + 60_000],
    ] as const) {
      const fresh = message('bob', '有人玩原神吗', { at: T0 });
      new Scenario(curious, settings).when({ event: fresh, at }).then((effects) => {
        expect(finalStates(effects)[fresh.id]).toBe('scheduled');
        expect(eventTimers(effects).map((t) => t.timer.purpose)).toEqual(['debounce']);
      });
    }
  });

  it('measures lateness in real time, and never hurries an @ or a fragment joining its sender’s open batch', () => {
    // Time scaled 60×: a minute of product time behind is one real second, within the limit.
    const scaled = new Scenario(curious);
    const replayed = message('alice', '今天好热', { at: T0 });
    const effects = react(replayed, scaled.state, {
      now: T0 + 60_000,
      groupId: scaled.groupId,
      settings: SETTINGS,
      attention: curious,
      messages: new Map([[replayed.id, replayed]]),
      realMs: (ms) => ms / 60,
    }).effects;
    expect(eventTimers(effects).map((t) => t.timer.purpose)).toEqual(['debounce']);
    // A message addressed to the bot read late still waits its direct wait for the rest of its sender's fragments:
    // an @, and a reply to the bot that arrived as an observed message.
    const ask = message('carol', '@bot 在吗', { direct: 'at', at: T0 });
    const reply = { ...message('erin', '对的', { direct: 'reply', at: T0 }), kind: EventKind.MessageObserved };
    for (const addressed of [ask, reply]) {
      new Scenario(curious).when({ event: addressed, at: T0 + 5000 }).then((effects) => {
        expect(finalStates(effects)[addressed.id]).toBe('scheduled');
        expect(eventTimers(effects).map((t) => [t.timer.purpose, t.timer.dueAt - T0])).toEqual([['debounce', 5800]]);
      });
    }
    // A late fragment joins the batch its sender already has open (its timer's firing still queued behind it).
    const s = new Scenario(curious);
    const first = message('dave', '我想问', { at: T0 });
    const second = message('dave', '周末去哪玩', { at: T0 + 300 });
    s.given(first)
      .when({ event: second, at: T0 + 2500 })
      .then((effects) => {
        expect(finalStates(effects)[second.id]).toBe('scheduled');
        expect(ofType(effects, 'moved').some((m) => m.decision)).toBe(false);
      });
    expect(s.timer('debounce').dueAt).toBe(T0 + 4500);
    expect(Object.values(s.state.batches).map((b) => b.eventIds)).toEqual([[first.id, second.id]]);
  });

  it('an @ preempts ambient work in its group: the ambient episode is superseded and its events skipped', () => {
    const s = new Scenario(curious, { ...SETTINGS, debounceQuietMs: 0, debounceDirectMs: 0 });
    const chat = message('alice', '有人玩原神吗');
    s.given(chat);
    const ambientEpisode = episodeIdFor(chat.id);
    expect(s.state.episodes[ambientEpisode]?.lane).toBe('ambient');
    const ask = message('bob', '@bot 帮我查一下', { direct: 'at' });
    s.when(ask).then((effects) => {
      const [control] = ofType(effects, 'control');
      expect(control!.control).toMatchObject({
        episodeId: ambientEpisode,
        command: 'supersede',
        seq: 2,
        supersededBy: episodeIdFor(ask.id),
      });
      expect(ofType(effects, 'withdrawn').map((w) => w.jobId)).toEqual([episodeJobId(ambientEpisode)]);
      expect(finalStates(effects)[chat.id]).toBe('skipped');
      expect(ofType(effects, 'episodeOffered')[0]!.job.lane).toBe('direct');
    });
  });

  it('interrupts a started episode when its sender goes on, taking the message in', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const ask = message('alice', '@bot 推荐本书', { direct: 'at' });
    s.given(ask, started(episodeIdFor(ask.id)));
    const more = message('alice', '要科幻的', { at: T0 + 2000 });
    s.when(more).then((effects) => {
      const [control] = ofType(effects, 'control');
      expect(control!.control).toMatchObject({ command: 'interrupt', seq: 2, eventIds: [more.id] });
      expect(finalStates(effects)[more.id]).toBe('deliberating');
      expect(ofType(effects, 'episodeOffered')).toEqual([]);
    });
  });

  it('supersedes a sender’s unstarted episode when a new batch of theirs is decided, carrying its events', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0, maxInterrupts: 0 });
    const first = message('alice', '@bot 在吗', { direct: 'at' });
    s.given(first);
    const second = message('alice', '@bot 问你个事', { direct: 'at', at: T0 + 100 });
    s.when(second).then((effects) => {
      const [control] = ofType(effects, 'control');
      expect(control!.control).toMatchObject({ episodeId: episodeIdFor(first.id), command: 'supersede', seq: 2 });
      const [offer] = ofType(effects, 'episodeOffered');
      expect(offer!.job).toMatchObject({
        triggerEventId: second.id,
        fragmentIds: [first.id],
        // Should the superseded one have answered after all, cognition leaves these out.
        inherited: [{ episodeId: episodeIdFor(first.id), eventIds: [first.id] }],
      });
      expect(offer!.episode.subjects).toEqual([first.id, second.id]);
    });
  });

  it('holds an event until notBefore and expires one whose deadline passes before it is answered', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const later = message('alice', '@bot 十分钟后提醒我', {
      direct: 'at',
      notBefore: T0 + 600_000,
      deadline: T0 + 900_000,
    });
    s.when(later).then((effects) => {
      expect(finalStates(effects)[later.id]).toBe('scheduled');
      expect(eventTimers(effects).map((t) => t.timer.purpose)).toEqual(['not_before', 'deadline']);
      expect(ofType(effects, 'episodeOffered')).toEqual([]);
    });
    s.when(fired(s.timer('not_before'))).then((effects) => {
      const [offer] = ofType(effects, 'episodeOffered');
      expect(offer!.episode.deadlineAt).toBe(T0 + 900_000);
      expect(ofType(effects, 'timerCancelled').map((t) => t.timerId)).toEqual([`deadline:${later.id}`]);
    });
    const deadline = s.timer('deadline');
    expect(deadline.episodeId).toBe(episodeIdFor(later.id));
    s.when(fired(deadline)).then((effects) => {
      expect(ofType(effects, 'control')[0]!.control).toMatchObject({ command: 'cancel', seq: 2 });
      const expired = ofType(effects, 'moved').find((m) => m.eventId === later.id)!;
      expect(expired.transitions[expired.transitions.length - 1]!.to).toBe('expired');
      expect(expired.decision?.reason).toMatch(/^expired: no answer before the deadline/);
    });
  });

  it('moves an episode’s events to replied once its reply is delivered', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const ask = message('alice', '@bot hi', { direct: 'at' });
    const episodeId = episodeIdFor(ask.id);
    s.given(ask, started(episodeId), completed(episodeId, 'replied'));
    const sent = fact(EventKind.MessageSent, {
      actionId: 'a',
      episodeId,
      triggerEventId: ask.id,
      targetType: 'group',
      targetId: '40001',
      segmentIndex: 0,
      segmentCount: 1,
      text: 'hi',
      attempts: 1,
      onebotMessageId: '9',
    });
    s.when(sent).then((effects, state) => {
      const moved = ofType(effects, 'moved').find((m) => m.eventId === ask.id)!;
      expect(moved.transitions.map((t) => t.to)).toEqual(['replied']);
      expect(state.episodes).toEqual({});
      expect(ofType(effects, 'timerCancelled').map((t) => t.purpose)).toEqual(['deadline']);
    });
    const trail = ofType(s.all, 'moved')
      .filter((m) => m.eventId === ask.id)
      .flatMap((m) => m.transitions.map((t) => t.to));
    expect(trail).toEqual(['classified', 'linked', 'scheduled', 'eligible', 'deliberating', 'replied']);
  });

  it('parks a waiting episode, frees its slot and resumes it with a continuation job when its timer fires', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const ask = message('alice', '@bot 等我查一下', { direct: 'at' });
    const episodeId = episodeIdFor(ask.id);
    s.given(ask, started(episodeId));
    const waiting = parked(episodeId, ask.id, T0 + 30_000, T0 + 60_000);
    s.when(waiting).then((effects) => {
      expect(ofType(effects, 'released').map((r) => r.jobId)).toEqual([episodeJobId(episodeId)]);
      expect(eventTimers(effects)[0]!.timer).toMatchObject({ purpose: 'episode_wait', dueAt: T0 + 30_000 });
    });
    const timer = s.timer('episode_wait');
    s.when(fired(timer)).then((effects) => {
      expect(ofType(effects, 'control')[0]!.control).toMatchObject({ command: 'resume', seq: 2, cause: 'timer' });
      const [offer] = ofType(effects, 'episodeOffered');
      expect(offer!.job).toMatchObject({ mode: 'resume', jobId: episodeJobId(episodeId, 'resume', 2), controlSeq: 2 });
    });
  });

  it('resumes on the tool result it waits for and ignores others', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const ask = message('alice', '@bot 查天气', { direct: 'at' });
    const episodeId = episodeIdFor(ask.id);
    s.given(
      ask,
      started(episodeId),
      fact(EventKind.EpisodeWaiting, {
        episodeId,
        triggerEventId: ask.id,
        cause: 'tool',
        step: 0,
        toolCallId: 'call-1',
        timeoutAt: new Date(T0 + 20_000).toISOString(),
        deadline: new Date(T0 + 60_000).toISOString(),
      }),
    );
    const result = (toolCallId: string) =>
      fact(EventKind.ToolResult, { episodeId, toolCallId, tool: 'weather', ok: true, text: '晴', latencyMs: 5 });
    s.when(result('call-other')).then((effects) => expect(effects).toEqual([]));
    s.when(result('call-1')).then((effects) => {
      expect(ofType(effects, 'control')[0]!.control).toMatchObject({
        command: 'resume',
        cause: 'tool_result',
        toolCallId: 'call-1',
      });
      expect(ofType(effects, 'timerCancelled').map((t) => t.purpose)).toEqual(['tool_timeout']);
    });
  });

  it('retries an episode that failed for a transient reason, then gives up with a reason', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const ask = message('alice', '@bot hi', { direct: 'at' });
    const episodeId = episodeIdFor(ask.id);
    s.given(ask, started(episodeId));
    s.when(completed(episodeId, 'failed', T0 + 1000, { code: 'LLM.TIMEOUT', message: 'slow' })).then((effects) => {
      expect(finalStates(effects)[ask.id]).toBe('snoozed');
      expect(eventTimers(effects)[0]!.timer).toMatchObject({ purpose: 'retry', dueAt: T0 + 6000 });
    });
    s.when(fired(s.timer('retry'))).then((effects) => {
      const [offer] = ofType(effects, 'episodeOffered');
      expect(offer!.episode).toMatchObject({ id: `${episodeId}-a2`, attempt: 2, subjects: [ask.id] });
    });
    s.when(completed(`${episodeId}-a2`, 'failed', T0 + 7000, { code: 'LLM.TIMEOUT', message: 'slow' })).then(
      (effects) => {
        const moved = ofType(effects, 'moved').find((m) => m.eventId === ask.id)!;
        expect(moved.decision?.reason).toBe('skipped: episode failed (LLM.TIMEOUT: slow)');
      },
    );
  });

  it('retries an episode that ran out of time (a worker died mid-episode) once, within the event deadline', () => {
    const s = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const ask = message('alice', '@bot 在吗', { direct: 'at' });
    const episodeId = episodeIdFor(ask.id);
    s.given(ask, started(episodeId));
    s.when(
      completed(episodeId, 'failed', T0 + 61_000, { code: 'EPISODE.DEADLINE_EXCEEDED', message: 'past its deadline' }),
    ).then((effects) => {
      expect(finalStates(effects)[ask.id]).toBe('snoozed');
      expect(eventTimers(effects)[0]!.timer).toMatchObject({ purpose: 'retry' });
    });
    s.when(fired(s.timer('retry'))).then((effects) => {
      expect(ofType(effects, 'episodeOffered')[0]!.episode).toMatchObject({ id: `${episodeId}-a2`, attempt: 2 });
    });
  });

  it('drops a debouncing message that was recalled, and cancels a running episode whose trigger was recalled', () => {
    const s = new Scenario();
    const ask = message('alice', '@bot 发错了', { direct: 'at' });
    s.given(ask);
    const recall = (m: typeof ask) =>
      fact(EventKind.MessageRecalled, {
        messageType: 'group',
        selfId: '10001',
        messageId: m.payload.messageId,
        userId: m.payload.sender.userId,
        operatorId: m.payload.sender.userId,
        recalledAt: 1,
      });
    s.when(recall(ask)).then((effects, state) => {
      expect(finalStates(effects)[ask.id]).toBe('skipped');
      expect(ofType(effects, 'moved').find((m) => m.decision)!.decision!.reason).toBe(
        'skipped: the message was recalled',
      );
      expect(ofType(effects, 'timerCancelled').map((t) => t.purpose)).toEqual(['debounce']);
      expect(state.batches).toEqual({});
    });

    const fast = new Scenario(undefined, { ...SETTINGS, debounceDirectMs: 0 });
    const other = message('bob', '@bot 查一下', { direct: 'at' });
    fast.given(other, started(episodeIdFor(other.id)));
    fast.when(recall(other)).then((effects) => {
      expect(ofType(effects, 'control')[0]!.control).toMatchObject({ command: 'cancel', seq: 2 });
      expect(ofType(effects, 'withdrawn')).toHaveLength(1);
      expect(finalStates(effects)[other.id]).toBe('skipped');
    });
  });

  it('cancels a dispatched episode it has no decision for, and ignores the late start of one that ended', () => {
    const s = new Scenario();
    s.when(started('ep_unknown')).then((effects) => {
      expect(ofType(effects, 'control')[0]!.control).toMatchObject({
        episodeId: 'ep_unknown',
        command: 'cancel',
        seq: 2,
      });
    });
    s.when(started('ep_unknown')).then((effects) => expect(effects).toEqual([]));
  });

  it('ignores a timer it no longer holds', () => {
    const s = new Scenario();
    s.when(fired({ timerId: 'debounce:gone', purpose: 'debounce', dueAt: T0 })).then((effects) =>
      expect(effects).toEqual([]),
    );
  });

  it('snoozes on attention’s word and skips after the snooze limit', () => {
    const sleepy: AttentionPolicy = {
      considersAmbient: true,
      judge: (input) => ({
        outcome: 'snooze',
        reason: 'snoozed: maybe later',
        features: {},
        snoozeUntil: input.now + 10_000,
      }),
    };
    const s = new Scenario(sleepy, { ...SETTINGS, debounceQuietMs: 0, maxSnoozes: 2 });
    const chat = message('alice', '嗯');
    s.given(chat);
    expect(s.state.events[chat.id]?.state).toBe('snoozed');
    s.run(fired(s.timer('snooze')));
    s.when(fired(s.timer('snooze'))).then((effects) => {
      const moved = ofType(effects, 'moved').find((m) => m.eventId === chat.id)!;
      expect(moved.decision?.reason).toBe('skipped: snoozed 2 times already (snoozed: maybe later)');
    });
  });
});
