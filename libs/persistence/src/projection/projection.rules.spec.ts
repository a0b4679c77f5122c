import {
  envelopeErrors,
  EventKind,
  makeEvent,
  unfoldTurn,
  type EventEnvelope,
  type EventState,
  type StateTransition,
} from '@app/contracts';
import { carryFacts, chain, schedulerChain, SELF_ID } from './chain.fixture.js';
import {
  foldEvents,
  mergeRow,
  READ_MODEL_RULES,
  READ_MODELS,
  UNKNOWN_SELF,
  type FoldContext,
  type LoggedEvent,
  type Projection,
  type ReadModel,
  type ReadModelRules,
} from './projection.rules.js';

function logged(events: EventEnvelope[], firstSeq = 1): LoggedEvent[] {
  return events.map((event, i) => ({ seq: firstSeq + i, event }));
}

/** The context the writer would build: the trigger's selfId, looked up in the archive. */
function contextFor(events: LoggedEvent[]): FoldContext {
  const triggers = new Map<string, { selfId: string; seq: number }>();
  for (const { seq, event } of events) {
    if (event.kind === EventKind.MessageDirect || event.kind === EventKind.MessageObserved) {
      triggers.set(event.id, { selfId: (event.payload as { selfId: string }).selfId, seq });
    }
  }
  return { triggers };
}

/** What the database holds after applying `later` on top of `earlier` (the SQL merge, in memory). */
function applyOver(earlier: Projection, later: Projection): Projection {
  const out = {} as Projection;
  for (const model of READ_MODELS) {
    const rules = READ_MODEL_RULES[model] as unknown as ReadModelRules<Record<string, unknown>>;
    const rows = new Map(earlier[model] as Map<string, Record<string, unknown>>);
    for (const [key, patch] of later[model] as Map<string, Record<string, unknown>>) {
      const existing = rows.get(key);
      rows.set(key, existing ? mergeRow(rules, existing, patch) : patch);
    }
    (out as Record<ReadModel, unknown>)[model] = rows;
  }
  return out;
}

function rows<M extends ReadModel>(projection: Projection, model: M) {
  return [...projection[model].values()];
}

/** Rows with unset columns normalised to null, as the table would show them. */
function table(projection: Projection): Record<ReadModel, Record<string, unknown>[]> {
  const out = {} as Record<ReadModel, Record<string, unknown>[]>;
  for (const model of READ_MODELS) {
    out[model] = [...(projection[model] as Map<string, Record<string, unknown>>).entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, row]) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v ?? null])))
      .map((row) => Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null)));
  }
  return out;
}

describe('the projection fold', () => {
  const { message, events: chainEvents, extra, episodeId, actionId } = chain();
  const events = [...chainEvents, ...extra];
  const all = logged(events);
  const projection = foldEvents(all, contextFor(all));

  it('turns one message chain into a row in every read model', () => {
    expect(rows(projection, 'messages')).toEqual([
      {
        eventId: message.id,
        groupId: '30001',
        messageId: '2096329721',
        userId: '20001',
        displayName: '爱丽丝',
        text: '@小群 今天吃什么？',
        segments: (message.payload as { segments: unknown }).segments,
        direct: true,
        directReason: 'at',
        fromSelf: false,
        sentAt: new Date(Date.UTC(2026, 10, 30, 10, 0, 0)),
      },
      {
        eventId: events[6]!.id,
        groupId: '30001',
        messageId: '-1000000',
        userId: SELF_ID,
        text: '火锅！',
        direct: false,
        fromSelf: true,
        sentAt: new Date(events[6]!.createdAt),
      },
    ]);

    expect(rows(projection, 'events')).toEqual([
      {
        id: message.id,
        groupId: '30001',
        kind: 'message.direct',
        state: 'replied',
        transitionSeq: 3,
        outcome: 'deliberate',
        // The reason that came with the current state: the last transition's, after the decision's.
        reason: 'reply sent',
        features: { directness: 1, attention: 0.92 },
        episodeId,
        updatedAt: new Date(events[7]!.createdAt),
      },
    ]);

    expect(rows(projection, 'eventTransitions').map((t) => [t.seq, t.fromState, t.toState, t.forced])).toEqual([
      [1, 'captured', 'classified', false],
      [2, 'classified', 'deliberating', true],
      [3, 'deliberating', 'replied', false],
    ]);

    const [episode] = rows(projection, 'episodes');
    expect(episode).toMatchObject({
      id: episodeId,
      triggerEventId: message.id,
      state: 'final',
      outcome: 'replied',
      model: 'gpt-4o-mini',
      attempt: 1,
      maxSteps: 4,
      steps: 1,
      tokensIn: 812,
      tokensOut: 35,
      durationMs: 890,
      startedAt: new Date(events[2]!.createdAt),
      finishedAt: new Date(events[5]!.createdAt),
    });
    expect(episode?.errorCode ?? null).toBeNull();

    expect(rows(projection, 'episodeSteps')).toEqual([
      {
        episodeId,
        idx: 0,
        thought: '她问吃什么，推荐火锅。',
        action: { type: 'reply', args: { text: '火锅！' } },
        observation: { ok: true, summary: 'reply accepted' },
        tokensIn: 812,
        tokensOut: 35,
        latencyMs: 870.5,
        at: new Date(events[3]!.createdAt),
        model: 'gpt-4o-mini',
        llmCalls: 2,
      },
    ]);

    expect(rows(projection, 'llmCalls')).toEqual([
      expect.objectContaining({
        episodeId,
        role: 'planner',
        model: 'gpt-4o-mini',
        tokensIn: 600,
        tokensOut: 20,
        step: 0,
      }),
    ]);
    expect(rows(projection, 'personas')).toEqual([
      expect.objectContaining({ version: 'v0', name: '林小满', policy: { mood: '平静' } }),
    ]);

    expect(rows(projection, 'sends')).toEqual([
      expect.objectContaining({
        actionId,
        segment: 0,
        state: 'sent',
        text: '火锅！',
        onebotMessageId: '-1000000',
        attempts: 1,
        segmentCount: 1,
        episodeId,
        targetType: 'group',
        targetId: '30001',
        at: new Date(events[6]!.createdAt),
      }),
    ]);
  });

  it('gives the same tables whatever the batch boundaries', () => {
    const whole = table(projection);
    for (let split = 1; split < all.length; split++) {
      const first = all.slice(0, split);
      const second = all.slice(split);
      const merged = applyOver(foldEvents(first, contextFor(first)), foldEvents(second, contextFor(all)));
      expect({ split, tables: table(merged) }).toEqual({ split, tables: whole });
    }
  });

  it('changes nothing when an event comes again', () => {
    const again = logged([...events, events[1]!, events[6]!]);
    expect(table(foldEvents(again, contextFor(all)))).toEqual(table(projection));
    expect(table(applyOver(projection, foldEvents(all, contextFor(all))))).toEqual(table(projection));
  });

  it('keeps the newest state when an older event is applied late', () => {
    // A decision reclaimed after a crash lands after the reply transition: the state must stay `replied`.
    const late = logged([events[0]!, events[7]!, events[1]!]);
    const [row] = rows(foldEvents(late, contextFor(late)), 'events');
    expect(row).toMatchObject({ state: 'replied', transitionSeq: 3, outcome: 'deliberate' });

    // An episode's late `started` does not undo its completion; a late request does not undo a delivery.
    const lateEpisode = logged([events[5]!, events[2]!, events[6]!, events[4]!]);
    const folded = foldEvents(lateEpisode, contextFor(lateEpisode));
    expect(rows(folded, 'episodes')[0]).toMatchObject({ state: 'final', model: 'gpt-4o-mini', attempt: 1 });
    expect(rows(folded, 'sends')[0]).toMatchObject({ state: 'sent', text: '火锅！', onebotMessageId: '-1000000' });
  });

  it('records the full text while a send is only requested, then each segment as it settles', () => {
    const { events: other } = chain('30002');
    const send = other[4]!;
    const failed = makeEvent({
      kind: EventKind.SendFailed,
      groupId: '30002',
      source: 'outbound',
      cause: send,
      createdAt: new Date(Date.parse(send.createdAt) + 3000),
      payload: {
        ...(send.payload as { actionId: string; episodeId: string; triggerEventId: string; targetId: string }),
        targetType: 'group',
        segmentIndex: 1,
        segmentCount: 2,
        text: '第二段',
        attempts: 3,
        error: { code: 'ONEBOT.RETCODE', message: 'retcode 1200' },
      },
    });
    const requested = foldEvents(logged([send]), { triggers: new Map() });
    expect(rows(requested, 'sends')).toEqual([
      expect.objectContaining({ segment: 0, state: 'requested', text: '火锅！' }),
    ]);
    const settled = foldEvents(logged([send, failed]), { triggers: new Map() });
    expect(rows(settled, 'sends').map((s) => [s.segment, s.state, s.text, s.errorCode ?? null])).toEqual([
      [0, 'requested', '火锅！', null],
      [1, 'failed', '第二段', 'ONEBOT.RETCODE'],
    ]);
  });

  it("names the bot 'self' when the sent message's trigger was not archived before it", () => {
    const sent = all[6]!;
    const unknown = foldEvents([sent], { triggers: new Map() });
    expect(rows(unknown, 'messages')[0]).toMatchObject({ userId: UNKNOWN_SELF, fromSelf: true });
    const later = foldEvents([sent], { triggers: new Map([[message.id, { selfId: SELF_ID, seq: sent.seq + 1 }]]) });
    expect(rows(later, 'messages')[0]).toMatchObject({ userId: UNKNOWN_SELF });
  });

  it('projects the life line into activities and beats only', () => {
    const beat = makeEvent({
      kind: EventKind.PersonalActivityBeat,
      groupId: null,
      source: 'life-director',
      payload: {
        activityId: 'a1',
        title: '午饭',
        description: '吃火锅',
        startedAt: new Date().toISOString(),
        expectedDurationMinutes: 45,
        progress: 0.5,
        beat: '锅开了',
        beatIndex: 0,
      },
    });
    const folded = foldEvents(logged([beat]), { triggers: new Map() });
    const touched = READ_MODELS.filter((model) => folded[model].size > 0);
    expect(touched).toEqual(['activities', 'beats']);
    expect(rows(folded, 'activities')[0]).toMatchObject({ id: 'a1', status: 'active', progress: 0.5, version: 1 });
    expect(rows(folded, 'beats')[0]).toMatchObject({ activityId: 'a1', idx: 0, text: '锅开了' });
  });
});

describe('a waiting episode in the fold', () => {
  it('goes thinking → awaiting_observation → thinking, whatever order the batches bring it in', () => {
    const { events, episodeId, message } = chain('30009');
    const [, , started] = events;
    const at = (ms: number) => new Date(Date.parse(started!.createdAt) + ms);
    const step = (index: number, ms: number) =>
      makeEvent({
        kind: EventKind.EpisodeStep,
        groupId: '30009',
        source: 'cognition',
        cause: started!,
        createdAt: at(ms),
        payload: { episodeId, index, tokensIn: 1, tokensOut: 1, latencyMs: 1 },
      });
    const waiting = makeEvent({
      kind: EventKind.EpisodeWaiting,
      groupId: '30009',
      source: 'cognition',
      cause: started!,
      createdAt: at(2),
      payload: {
        episodeId,
        triggerEventId: message.id,
        cause: 'wait',
        step: 0,
        resumeAt: at(30_000).toISOString(),
        deadline: at(60_000).toISOString(),
      },
    });
    const parked = logged([started!, step(0, 1), waiting]);
    expect(rows(foldEvents(parked, contextFor(parked)), 'episodes')[0]).toMatchObject({
      state: 'awaiting_observation',
      waitingCause: 'wait',
      resumeAt: at(30_000),
    });
    const resumed = logged([started!, step(0, 1), waiting, step(1, 31_000)]);
    expect(rows(foldEvents(resumed, contextFor(resumed)), 'episodes')[0]).toMatchObject({
      state: 'thinking',
      waitingCause: null,
    });
    const late = logged([step(1, 31_000), waiting, started!]);
    expect(rows(foldEvents(late, contextFor(late)), 'episodes')[0]).toMatchObject({ state: 'thinking' });
  });
});

describe('facts a move event carries (ADR-0024)', () => {
  // A debounce timer set and moved while the decision is made, the rest after the reply's transition.
  const c = chain('30011');
  const sc = schedulerChain('30011');
  const log = [c.events[0]!, c.events[1]!, sc[0]!, sc[1]!, sc[2]!, ...c.events.slice(2), ...sc.slice(3), ...c.extra];
  const { carried, standalone } = carryFacts(log);

  it('are valid envelopes, and fewer of them', () => {
    for (const event of carried)
      expect({ id: event.id, errors: envelopeErrors(event) }).toEqual({ id: event.id, errors: [] });
    expect(carried.length).toBeLessThan(standalone.length);
    expect(carried.filter((e) => e.kind === EventKind.TimerScheduled || e.kind === EventKind.ThreadUpdated)).toEqual(
      [],
    );
    expect(carried.filter((e) => (e.payload as { turn?: unknown }).turn !== undefined).map((e) => e.kind)).toEqual([
      EventKind.DecisionMade,
      EventKind.EventTransitioned,
    ]);
  });

  it('fold into exactly the rows the same facts as standalone events give', () => {
    const a = logged(carried);
    const b = logged(standalone);
    const folded = table(foldEvents(a, contextFor(a)));
    expect(folded).toEqual(table(foldEvents(b, contextFor(b))));
    expect(folded.timers).toHaveLength(2);
    expect(folded.threads).toEqual([expect.objectContaining({ version: 2, botJoined: true })]);
    expect(folded.groupActors).toEqual([expect.objectContaining({ lastPartnerId: '40002', budget: 3 })]);
  });

  it('give the same tables whatever the batch boundaries', () => {
    const all = logged(carried);
    const whole = table(foldEvents(all, contextFor(all)));
    for (let split = 1; split < all.length; split++) {
      const merged = applyOver(
        foldEvents(all.slice(0, split), contextFor(all.slice(0, split))),
        foldEvents(all.slice(split), contextFor(all)),
      );
      expect({ split, tables: table(merged) }).toEqual({ split, tables: whole });
    }
  });

  it('unfold into nothing on any other event, or a move event without them', () => {
    expect(unfoldTurn(c.events[0]!)).toEqual([]);
    expect(unfoldTurn(c.events[1]!)).toEqual([]);
    const facts = unfoldTurn(carried[1]!);
    expect(facts.map((f) => f.kind)).toEqual([EventKind.TimerScheduled, EventKind.TimerScheduled]);
    expect(facts.every((f) => f.createdAt === carried[1]!.createdAt && f.groupId === '30011')).toBe(true);
  });
});

describe('a waiting message’s record published with its decision (ADR 0033)', () => {
  const t0 = Date.UTC(2026, 11, 2, 9, 0, 0);
  const at = (offsetMs: number) => new Date(t0 + offsetMs);
  const iso = (offsetMs: number) => at(offsetMs).toISOString();
  const groupId = '30033';
  const message = chain(groupId, t0).message;
  const subject = message.id;
  const scheduler = { groupId, source: 'scheduler', cause: message } as const;
  const move = (seq: number, from: EventState, to: EventState, offsetMs: number): StateTransition => ({
    seq,
    from,
    to,
    reason: `${to}: …`,
    forced: false,
    by: 'scheduler',
    at: iso(offsetMs),
  });
  const waiting = [
    move(1, 'captured', 'classified', 5),
    move(2, 'classified', 'linked', 5),
    move(3, 'linked', 'scheduled', 5),
  ];
  const thread = {
    threadId: 't1',
    version: 1,
    startedAt: iso(5),
    lastActivityAt: iso(5),
    participants: ['40001'],
    messages: 1,
    botJoined: false,
    openQuestions: [],
    link: 'new',
    subjectEventId: subject,
  };
  const timer = {
    timerId: `debounce:${subject}`,
    purpose: 'debounce',
    subjectEventId: subject,
    dueAt: iso(2005),
  } as const;
  const fired = makeEvent({
    ...scheduler,
    kind: EventKind.TimerFired,
    createdAt: at(2010),
    payload: { ...timer, setAt: iso(5) },
  });
  const decided = (transitions: StateTransition[], turn?: object) =>
    makeEvent({
      ...scheduler,
      cause: fired,
      kind: EventKind.DecisionMade,
      createdAt: at(2012),
      evidenceMessageIds: [subject],
      payload: {
        subjectEventId: subject,
        outcome: 'skip',
        reason: 'skipped: 0.1 < 0.35',
        features: { score: 0.1 },
        transitions,
        keywordHits: [],
        threadId: 't1',
        ...(turn ? { turn } : {}),
      },
    });
  // Published when it happened: the wait's own event, then the timer and the decision.
  const atOnce = [
    message,
    makeEvent({
      ...scheduler,
      kind: EventKind.EventTransitioned,
      createdAt: at(5),
      actorIds: message.actorIds,
      evidenceMessageIds: [subject],
      payload: { subjectEventId: subject, transitions: waiting, turn: { threads: [thread], timersScheduled: [timer] } },
    }),
    fired,
    decided([move(4, 'scheduled', 'skipped', 2012)]),
  ];
  // Recorded in the group state and carried by the decision, the timer dated when it was set.
  const carried = [
    message,
    fired,
    decided([...waiting, move(4, 'scheduled', 'skipped', 2012)], {
      threads: [thread],
      timersScheduled: [{ ...timer, setAt: iso(5) }],
    }),
  ];

  it('are valid envelopes', () => {
    for (const event of [...atOnce, ...carried])
      expect({ id: event.id, errors: envelopeErrors(event) }).toEqual({ id: event.id, errors: [] });
  });

  it('fold into exactly the rows the wait’s own event gives, whatever the batch boundaries', () => {
    const a = logged(carried);
    const b = logged(atOnce);
    const whole = table(foldEvents(a, contextFor(a)));
    expect(whole).toEqual(table(foldEvents(b, contextFor(b))));
    expect(whole.eventTransitions.map((row) => [row.seq, row.at])).toEqual([
      [1, at(5)],
      [2, at(5)],
      [3, at(5)],
      [4, at(2012)],
    ]);
    expect(whole.timers).toEqual([expect.objectContaining({ setAt: at(5), firedAt: at(2010), state: 'fired' })]);
    for (let split = 1; split < a.length; split++) {
      const merged = applyOver(
        foldEvents(a.slice(0, split), contextFor(a.slice(0, split))),
        foldEvents(a.slice(split), contextFor(a)),
      );
      expect({ split, tables: table(merged) }).toEqual({ split, tables: whole });
    }
  });
});
