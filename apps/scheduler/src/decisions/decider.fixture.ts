import {
  EventKind,
  makeEvent,
  type DirectReason,
  type EpisodeCompletedPayload,
  type EventEnvelope,
  type EventKind as Kind,
  type MessagePayload,
  type PayloadOf,
} from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { DEFAULT_THREAD_SETTINGS } from '../threads/thread-linking.js';
import { forcedOnlyAttention, type AttentionPolicy } from './attention.policy.js';
import { react } from './event.decider.js';
import {
  initialState,
  type GroupState,
  type SchedulerEffect,
  type SchedulerSettings,
  type TimerSpec,
} from './group-state.js';

/** Test kit for the decider: deterministic events and a given / when / then runner. */

export const GROUP = '40001';
export const T0 = Date.parse('2026-12-01T08:00:00.000Z');

export const SETTINGS: SchedulerSettings = {
  debounceQuietMs: 2000,
  debounceMaxMs: 8000,
  debounceDirectMs: 800,
  ambientLateMs: 2000,
  eventDeadlineMs: 300_000,
  episodeTimeoutMs: 60_000,
  maxInterrupts: 3,
  episodeRetries: 1,
  retryDelayMs: 5000,
  maxSnoozes: 3,
  threads: DEFAULT_THREAD_SETTINGS,
};

let counter = 0;

/** A message of `sender` at product time `at`; `direct` marks it addressed to the bot. */
export function message(
  sender: string,
  text: string,
  options: {
    direct?: DirectReason;
    at?: number;
    notBefore?: number;
    deadline?: number;
    thread?: string;
    group?: string;
    replyTo?: string;
  } = {},
): EventEnvelope<MessagePayload> {
  counter++;
  const payload = sampleMessage(text, {
    messageId: `m${counter}`,
    sender: { userId: sender, nickname: sender, card: '', displayName: sender, role: 'member' },
    mentionsSelf: options.direct === 'at',
    ...(options.direct ? { directReason: options.direct } : {}),
    ...(options.replyTo ? { replyToMessageId: options.replyTo } : {}),
  });
  return makeEvent({
    kind: options.direct ? EventKind.MessageDirect : EventKind.MessageObserved,
    groupId: options.group ?? GROUP,
    source: 'ingress',
    payload,
    id: `e${String(counter).padStart(4, '0')}`,
    priority: options.direct ? 0 : 5,
    createdAt: new Date(options.at ?? T0),
    ...(options.thread ? { threadId: options.thread } : {}),
    ...(options.notBefore !== undefined ? { notBefore: new Date(options.notBefore) } : {}),
    ...(options.deadline !== undefined ? { deadline: new Date(options.deadline) } : {}),
  });
}

export function fact<K extends Kind>(
  kind: K,
  payload: PayloadOf<K>,
  at = T0,
  group = GROUP,
): EventEnvelope<PayloadOf<K>> {
  counter++;
  return makeEvent({ kind, groupId: group, source: 'test', payload, id: `f${counter}`, createdAt: new Date(at) });
}

export function fired(timer: TimerSpec, at = timer.dueAt): EventEnvelope {
  return fact(
    EventKind.TimerFired,
    {
      timerId: timer.timerId,
      purpose: timer.purpose,
      dueAt: new Date(timer.dueAt).toISOString(),
      setAt: new Date(T0).toISOString(),
      ...(timer.subjectEventId ? { subjectEventId: timer.subjectEventId } : {}),
      ...(timer.episodeId ? { episodeId: timer.episodeId } : {}),
    },
    at,
  );
}

export function started(episodeId: string, at = T0): EventEnvelope {
  return fact(EventKind.EpisodeControl, { episodeId, command: 'start', seq: 1, reason: 'start: dispatched' }, at);
}

export function completed(
  episodeId: string,
  outcome: EpisodeCompletedPayload['outcome'],
  at = T0,
  error?: { code: string; message: string },
  answered?: string[],
): EventEnvelope {
  return fact(
    EventKind.EpisodeCompleted,
    {
      episodeId,
      triggerEventId: 'x',
      outcome,
      steps: 1,
      tokensIn: 1,
      tokensOut: 1,
      durationMs: 1,
      ...(error ? { error } : {}),
      ...(answered ? { answeredEventIds: answered } : {}),
    },
    at,
  );
}

/** A completion `replied` whose replies covered `answered` (cognition's `answeredEventIds`). */
export function repliedCovering(episodeId: string, answered: string[], at = T0): EventEnvelope {
  return completed(episodeId, 'replied', at, undefined, answered);
}

/** The `action.send` of an episode's step; `answered` is what its replies covered so far (absent: older cognition). */
export function sendAction(episodeId: string, options: { step?: number; answered?: string[]; at?: number } = {}) {
  return fact(
    EventKind.ActionSend,
    {
      actionId: `act_${episodeId}_${options.step ?? 0}`,
      episodeId,
      triggerEventId: 'x',
      targetType: 'group',
      targetId: GROUP,
      text: '好的',
      ...(options.answered ? { answeredEventIds: options.answered } : {}),
    },
    options.at,
  );
}

/** The `message.sent` of that step's reply. */
export function sentMessage(episodeId: string, options: { step?: number; at?: number } = {}) {
  return fact(
    EventKind.MessageSent,
    {
      actionId: `act_${episodeId}_${options.step ?? 0}`,
      episodeId,
      triggerEventId: 'x',
      targetType: 'group',
      targetId: GROUP,
      segmentIndex: 0,
      segmentCount: 1,
      text: '好的',
      attempts: 1,
      onebotMessageId: `9${options.step ?? 0}`,
    },
    options.at,
  );
}

export type Step = EventEnvelope | { event: EventEnvelope; at: number };

function unpack(step: Step): { event: EventEnvelope; at: number } {
  return 'event' in step ? step : { event: step, at: Date.parse(step.createdAt) };
}

/**
 * `given(steps).when(step).then(check)`: the state is folded from `given`, `check` sees only what `when` decided.
 * Each step runs at its own product time (the event's `createdAt`, or `{ event, at }`).
 */
export class Scenario {
  state: GroupState = initialState();
  readonly messages = new Map<string, EventEnvelope<MessagePayload>>();
  readonly all: SchedulerEffect[] = [];
  /** Set by `recordTurns()`: every turn's state before (and a deep copy of it, taken first), effects and after. */
  turns: { before: GroupState; copy: GroupState; effects: SchedulerEffect[]; after: GroupState }[] | undefined;

  constructor(
    readonly attention: AttentionPolicy = forcedOnlyAttention,
    readonly settings: SchedulerSettings = SETTINGS,
    readonly groupId: string = GROUP,
  ) {}

  run(step: Step): SchedulerEffect[] {
    const { event, at } = unpack(step);
    if (event.kind === EventKind.MessageObserved || event.kind === EventKind.MessageDirect) {
      this.messages.set(event.id, event as EventEnvelope<MessagePayload>);
    }
    const before = this.state;
    const copy = this.turns ? structuredClone(before) : before;
    const result = react(event, this.state, {
      now: at,
      groupId: this.groupId,
      settings: this.settings,
      attention: this.attention,
      messages: this.messages,
    });
    this.state = result.state;
    this.all.push(...result.effects);
    this.turns?.push({ before, copy, effects: result.effects, after: result.state });
    return result.effects;
  }

  recordTurns(): this {
    this.turns = [];
    return this;
  }

  given(...steps: Step[]): this {
    for (const step of steps) this.run(step);
    return this;
  }

  when(step: Step): { then: (check: (effects: SchedulerEffect[], state: GroupState) => void) => Scenario } {
    const effects = this.run(step);
    return {
      then: (check) => {
        check(effects, this.state);
        return this;
      },
    };
  }

  /** The timer this scenario set last under `purpose`. */
  timer(purpose: TimerSpec['purpose']): TimerSpec {
    const set = this.all.filter((e) => e.type === 'timerSet' && e.timer.purpose === purpose);
    const last = set[set.length - 1];
    if (!last || last.type !== 'timerSet') throw new Error(`no ${purpose} timer was set`);
    return last.timer;
  }
}

export function ofType<T extends SchedulerEffect['type']>(
  effects: SchedulerEffect[],
  type: T,
): Extract<SchedulerEffect, { type: T }>[] {
  return effects.filter((e): e is Extract<SchedulerEffect, { type: T }> => e.type === type);
}

/** The final state each event reached in these effects, by event id. */
export function finalStates(effects: SchedulerEffect[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of ofType(effects, 'moved')) out[e.eventId] = e.transitions[e.transitions.length - 1]!.to;
  return out;
}
