import {
  actionIdFor,
  episodeIdFor,
  EventKind,
  makeEvent,
  type EventEnvelope,
  type MessagePayload,
} from '@app/contracts';

/**
 * One message through the whole runtime, as the log records it: an @-mention, the decision, an episode with one
 * step, the reply action, its delivery and the final transition. Times are fixed so rows can be compared exactly.
 */
export interface Chain {
  message: EventEnvelope;
  events: EventEnvelope[];
  /** Cognition's accounting events of the chain (`llm.called`, `persona.published`), for the tables they feed. */
  extra: EventEnvelope[];
  episodeId: string;
  actionId: string;
}

export const SELF_ID = '10001';

export function messagePayload(overrides: Partial<MessagePayload> = {}): MessagePayload {
  return {
    messageType: 'group',
    selfId: SELF_ID,
    messageId: '2096329721',
    sender: { userId: '20001', nickname: 'Alice', card: '爱丽丝', displayName: '爱丽丝', role: 'member' },
    segments: [
      { type: 'at', data: { qq: SELF_ID } },
      { type: 'text', data: { text: ' 今天吃什么？' } },
    ],
    text: '@小群 今天吃什么？',
    truncated: false,
    mentionsSelf: true,
    directReason: 'at',
    sentAt: 1_796_000_000,
    ...overrides,
  };
}

export function chain(groupId = '30001', startMs = Date.UTC(2026, 10, 30, 10, 0, 0), n = 0): Chain {
  const at = (offsetMs: number) => new Date(startMs + offsetMs);
  const message = makeEvent({
    kind: EventKind.MessageDirect,
    groupId,
    source: 'ingress',
    createdAt: at(0),
    payload: messagePayload({ messageId: String(2096329721 + n), sentAt: Math.floor(startMs / 1000) }),
  });
  const episodeId = episodeIdFor(message.id);
  const actionId = actionIdFor(episodeId, 0);
  const decision = makeEvent({
    kind: EventKind.DecisionMade,
    groupId,
    source: 'scheduler',
    cause: message,
    createdAt: at(5),
    payload: {
      subjectEventId: message.id,
      outcome: 'deliberate',
      reason: 'deliberate: @-mentioned the bot',
      features: { directness: 1, attention: 0.92 },
      episodeId,
      transitions: [
        { seq: 1, from: 'captured', to: 'classified', reason: 'direct: at', forced: false },
        { seq: 2, from: 'classified', to: 'deliberating', reason: 'forced: @-mention', forced: true },
      ],
    },
  });
  const started = makeEvent({
    kind: EventKind.EpisodeStarted,
    groupId,
    source: 'cognition',
    cause: decision,
    createdAt: at(20),
    payload: {
      episodeId,
      triggerEventId: message.id,
      model: 'gpt-4o-mini',
      deadline: at(60_020).toISOString(),
      maxSteps: 4,
      attempt: 1,
    },
  });
  const step = makeEvent({
    kind: EventKind.EpisodeStep,
    groupId,
    source: 'cognition',
    cause: started,
    createdAt: at(900),
    payload: {
      episodeId,
      index: 0,
      thought: '她问吃什么，推荐火锅。',
      action: { type: 'reply', args: { text: '火锅！' } },
      observation: { ok: true, summary: 'reply accepted' },
      tokensIn: 812,
      tokensOut: 35,
      latencyMs: 870.5,
      model: 'gpt-4o-mini',
      llmCalls: 2,
    },
  });
  const completed = makeEvent({
    kind: EventKind.EpisodeCompleted,
    groupId,
    source: 'cognition',
    cause: step,
    createdAt: at(910),
    payload: {
      episodeId,
      triggerEventId: message.id,
      outcome: 'replied',
      steps: 1,
      tokensIn: 812,
      tokensOut: 35,
      durationMs: 890,
    },
  });
  const send = makeEvent({
    kind: EventKind.ActionSend,
    groupId,
    source: 'cognition',
    cause: step,
    createdAt: at(905),
    payload: {
      actionId,
      episodeId,
      triggerEventId: message.id,
      targetType: 'group',
      targetId: groupId,
      text: '火锅！',
      quoteMessageId: '2096329721',
    },
  });
  const sent = makeEvent({
    kind: EventKind.MessageSent,
    groupId,
    source: 'outbound',
    cause: send,
    createdAt: at(1200),
    payload: {
      actionId,
      episodeId,
      triggerEventId: message.id,
      targetType: 'group',
      targetId: groupId,
      segmentIndex: 0,
      segmentCount: 1,
      text: '火锅！',
      attempts: 1,
      onebotMessageId: String(-1_000_000 - n),
    },
  });
  const replied = makeEvent({
    kind: EventKind.EventTransitioned,
    groupId,
    source: 'scheduler',
    cause: sent,
    createdAt: at(1250),
    payload: {
      subjectEventId: message.id,
      transitions: [{ seq: 3, from: 'deliberating', to: 'replied', reason: 'reply sent', forced: false }],
    },
  });
  const called = makeEvent({
    kind: EventKind.LlmCalled,
    groupId,
    source: 'cognition',
    cause: started,
    createdAt: at(880),
    payload: {
      callId: `${episodeId}:0:planner:1`,
      episodeId,
      role: 'planner',
      model: 'gpt-4o-mini',
      purpose: 'planner',
      outcome: 'ok',
      tokensIn: 600,
      tokensOut: 20,
      estimated: false,
      attempts: 1,
      latencyMs: 500,
      step: 0,
    },
  });
  const persona = makeEvent({
    kind: EventKind.PersonaPublished,
    groupId: null,
    source: 'cognition',
    createdAt: at(0),
    payload: { version: `v${n}`, name: '林小满', source: 'personas/default.yaml', policy: { mood: '平静' } },
  });
  return {
    message,
    episodeId,
    actionId,
    events: [message, decision, started, step, send, completed, sent, replied],
    extra: [called, persona],
  };
}

/**
 * What the scheduler adds around a chain: a debounce timer set, moved and fired, a deadline timer cancelled, and
 * the episode's control commands.
 */
export function schedulerChain(groupId = '30001', startMs = Date.UTC(2026, 10, 30, 10, 0, 0), n = 0): EventEnvelope[] {
  const at = (offsetMs: number) => new Date(startMs + offsetMs);
  const subject = `e-${groupId}-${n}`;
  const episodeId = episodeIdFor(subject);
  const scheduler = { groupId, source: 'scheduler', createdAt: at(0) } as const;
  return [
    makeEvent({
      ...scheduler,
      kind: EventKind.TimerScheduled,
      payload: {
        timerId: `debounce:${subject}`,
        purpose: 'debounce',
        subjectEventId: subject,
        dueAt: at(800).toISOString(),
      },
    }),
    makeEvent({
      ...scheduler,
      kind: EventKind.TimerScheduled,
      createdAt: at(300),
      payload: {
        timerId: `debounce:${subject}`,
        purpose: 'debounce',
        subjectEventId: subject,
        dueAt: at(1100).toISOString(),
      },
    }),
    makeEvent({
      ...scheduler,
      kind: EventKind.TimerFired,
      createdAt: at(1150),
      payload: {
        timerId: `debounce:${subject}`,
        purpose: 'debounce',
        subjectEventId: subject,
        dueAt: at(1100).toISOString(),
        setAt: at(300).toISOString(),
      },
    }),
    makeEvent({
      ...scheduler,
      kind: EventKind.TimerScheduled,
      createdAt: at(1160),
      payload: { timerId: `deadline:${episodeId}`, purpose: 'deadline', episodeId, dueAt: at(300_000).toISOString() },
    }),
    makeEvent({
      ...scheduler,
      kind: EventKind.EpisodeControl,
      createdAt: at(1170),
      payload: {
        episodeId,
        command: 'start',
        seq: 1,
        reason: 'start: granted a slot (direct lane)',
        eventIds: [subject],
      },
    }),
    makeEvent({
      ...scheduler,
      kind: EventKind.EpisodeControl,
      createdAt: at(1500),
      payload: { episodeId, command: 'cancel', seq: 2, reason: `cancelled: ${subject} it answers was recalled` },
    }),
    makeEvent({
      ...scheduler,
      kind: EventKind.TimerCancelled,
      createdAt: at(1500),
      payload: { timerId: `deadline:${episodeId}`, purpose: 'deadline', reason: 'the episode ended' },
    }),
    ...attentionFacts(groupId, subject, at),
  ];
}

/** A thread as attention reports it (opened, answered by the bot, idle) and the group actor after the reply. */
function attentionFacts(groupId: string, subject: string, at: (offsetMs: number) => Date): EventEnvelope[] {
  const threadId = `t-${subject}`;
  const scheduler = { groupId, source: 'scheduler', threadId } as const;
  const snapshot = (version: number, lastMs: number, botJoined: boolean) => ({
    threadId,
    version,
    startedAt: at(0).toISOString(),
    lastActivityAt: at(lastMs).toISOString(),
    participants: botJoined ? ['40002', 'self'] : ['40002'],
    messages: 1,
    botJoined,
    ...(botJoined ? { lastBotReplyAt: at(lastMs).toISOString() } : {}),
    openQuestions: botJoined
      ? []
      : [{ eventId: subject, senderId: '40002', askedAt: at(0).toISOString(), text: '猫咪吐毛球怎么办？' }],
    link: botJoined ? 'bot' : 'new',
  });
  return [
    makeEvent({
      ...scheduler,
      kind: EventKind.ThreadUpdated,
      createdAt: at(0),
      payload: { ...snapshot(1, 0, false), subjectEventId: subject },
    }),
    makeEvent({ ...scheduler, kind: EventKind.ThreadUpdated, createdAt: at(1400), payload: snapshot(2, 1400, true) }),
    makeEvent({
      groupId,
      source: 'scheduler',
      kind: EventKind.GroupActorUpdated,
      createdAt: at(1400),
      payload: {
        version: at(1400).getTime(),
        lastBotReplyAt: at(1400).toISOString(),
        lastPartnerId: '40002',
        repliesInWindow: 1,
        budget: 3,
        cooldownUntil: at(76_400).toISOString(),
        activeThreads: [threadId],
        activeEvents: 0,
        reason: `replied to 40002 in ${threadId}`,
      },
    }),
    makeEvent({
      ...scheduler,
      kind: EventKind.ThreadIdle,
      createdAt: at(601_400),
      payload: { ...snapshot(2, 1400, true), idleAt: at(601_400).toISOString() },
    }),
  ];
}

const CARRIED_KINDS: ReadonlySet<string> = new Set([
  EventKind.ThreadIdle,
  EventKind.ThreadUpdated,
  EventKind.GroupActorUpdated,
  EventKind.TimerScheduled,
  EventKind.TimerCancelled,
]);

/**
 * A log of standalone scheduler facts rewritten the way the scheduler writes it since ADR-0024: every
 * `thread.idle`/`thread.updated`/`group.actor.updated`/`timer.scheduled`/`timer.cancelled` rides in `payload.turn`
 * of the last move event (`decision.made`/`event.transitioned`) of its group before it; a fact with no such event
 * stays standalone. `standalone` is the same log in the older shape with each fact right after its carrier and at
 * the carrier's time (one turn, one clock) — what the two shapes must fold to alike.
 */
export function carryFacts(events: readonly EventEnvelope[]): {
  carried: EventEnvelope[];
  standalone: EventEnvelope[];
} {
  interface Slot {
    carrier: EventEnvelope;
    turn: Record<string, unknown>;
    facts: EventEnvelope[];
  }
  const lastMove = new Map<string | null, Slot>();
  const order: (EventEnvelope | Slot)[] = [];
  for (const event of events) {
    if (event.kind === EventKind.DecisionMade || event.kind === EventKind.EventTransitioned) {
      const slot: Slot = { carrier: event, turn: {}, facts: [] };
      lastMove.set(event.groupId, slot);
      order.push(slot);
      continue;
    }
    const slot = CARRIED_KINDS.has(event.kind) ? lastMove.get(event.groupId) : undefined;
    if (!slot) {
      order.push(event);
      continue;
    }
    const field = {
      [EventKind.ThreadIdle]: 'threadsIdle',
      [EventKind.ThreadUpdated]: 'threads',
      [EventKind.GroupActorUpdated]: 'actor',
      [EventKind.TimerScheduled]: 'timersScheduled',
      [EventKind.TimerCancelled]: 'timersCancelled',
    }[event.kind as string]!;
    if (field === 'actor') slot.turn.actor = event.payload;
    else ((slot.turn[field] as unknown[] | undefined) ?? (slot.turn[field] = [])).push(event.payload);
    slot.facts.push({ ...event, createdAt: slot.carrier.createdAt });
  }
  const carried: EventEnvelope[] = [];
  const standalone: EventEnvelope[] = [];
  const kindOrder = [...CARRIED_KINDS];
  for (const item of order) {
    if (!('carrier' in item)) {
      carried.push(item);
      standalone.push(item);
      continue;
    }
    const turn = Object.keys(item.turn).length > 0 ? { turn: item.turn } : {};
    carried.push({ ...item.carrier, payload: { ...(item.carrier.payload as object), ...turn } });
    standalone.push(item.carrier);
    // The order the scheduler published standalone facts in: idle threads, updated threads, actor, timers.
    standalone.push(...[...item.facts].sort((a, b) => kindOrder.indexOf(a.kind) - kindOrder.indexOf(b.kind)));
  }
  return { carried, standalone };
}
