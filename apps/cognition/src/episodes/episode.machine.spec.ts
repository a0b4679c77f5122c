import { makeEvent, EventKind, type EpisodeControlPayload } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import type { ChatLine, EpisodeState } from './episode-state.js';
import {
  canMove,
  controlEffect,
  decidePlannerAnswer,
  earlierOf,
  effectiveRole,
  followUpsOf,
  interruptible,
  limitReached,
  mergeMessages,
  moveTo,
  waitFits,
} from './episode.machine.js';

const NOW = Date.UTC(2026, 11, 1, 10, 0, 0);

function line(id: string, userId = '20001', extra: Partial<ChatLine> = {}): ChatLine {
  return {
    kind: 'message',
    eventId: `e${id}`,
    messageId: id,
    userId,
    name: `u${userId}`,
    text: `t${id}`,
    sentAt: NOW / 1000,
    fromSelf: false,
    role: 'member',
    ...extra,
  };
}

function state(extra: Partial<EpisodeState> = {}): EpisodeState {
  const trigger = makeEvent({
    kind: EventKind.MessageDirect,
    groupId: '30001',
    payload: sampleMessage('hi'),
    source: 'test',
  });
  return {
    episodeId: 'ep1',
    groupId: '30001',
    status: 'thinking',
    trigger,
    lane: 'direct',
    startedAt: new Date(NOW).toISOString(),
    deadline: new Date(NOW + 60_000).toISOString(),
    maxSteps: 4,
    tokenBudget: 10_000,
    step: 0,
    tokensIn: 0,
    tokensOut: 0,
    llmCalls: 0,
    appliedSeq: 1,
    interruptsInARow: 0,
    invalidInARow: 0,
    history: [line('100')],
    windowStart: 0,
    discovered: [],
    lastThought: null,
    addressees: [{ messageId: '100', userId: '20001', role: 'member' }],
    replies: 0,
    waiting: null,
    inFlightTool: null,
    outcome: null,
    endedBy: null,
    personaVersion: 'v',
    systemPrompt: '',
    situationPrompt: '',
    ...extra,
  };
}

const control = (
  command: EpisodeControlPayload['command'],
  seq: number,
  extra: Partial<EpisodeControlPayload> = {},
): EpisodeControlPayload => ({
  episodeId: 'ep1',
  command,
  seq,
  reason: command,
  ...extra,
});

const toolCall = (name: string, args: unknown) => ({
  content: null,
  toolCalls: [{ id: 'c1', name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }],
});
const OFFERED = new Set(['reply', 'wait', 'no_action', 'finish', 'tool_search']);

describe('episode state machine', () => {
  it('allows pending → thinking → acting → awaiting_observation → thinking → final, nothing after final', () => {
    expect(canMove('pending', 'thinking')).toBe(true);
    expect(canMove('thinking', 'acting')).toBe(true);
    expect(canMove('acting', 'awaiting_observation')).toBe(true);
    expect(canMove('awaiting_observation', 'thinking')).toBe(true);
    expect(canMove('thinking', 'final')).toBe(true);
    expect(canMove('pending', 'acting')).toBe(false);
    expect(canMove('awaiting_observation', 'acting')).toBe(false);
    expect(canMove('final', 'thinking')).toBe(false);
    expect(() => moveTo(state({ status: 'final' }), 'thinking')).toThrow(
      expect.objectContaining({ code: 'EPISODE.BAD_TRANSITION' }),
    );
  });

  it('ends at the deadline, at the token budget and after the last step, saying which', () => {
    expect(limitReached(state(), NOW)).toBeNull();
    expect(limitReached(state(), NOW + 60_000)).toMatchObject({
      cause: 'deadline',
      outcome: 'failed',
      errorCode: 'EPISODE.DEADLINE_EXCEEDED',
    });
    expect(limitReached(state({ tokensIn: 9000, tokensOut: 1000 }), NOW)).toMatchObject({
      cause: 'token_budget',
      errorCode: 'EPISODE.TOKEN_BUDGET_EXCEEDED',
    });
    expect(limitReached(state({ step: 4 }), NOW)).toMatchObject({ cause: 'max_steps', outcome: 'no_reply' });
    expect(limitReached(state({ step: 4, replies: 1 }), NOW)).toMatchObject({ cause: 'max_steps', outcome: 'replied' });
    expect(limitReached(state({ replies: 1 }), NOW + 60_000)).toMatchObject({ cause: 'deadline', outcome: 'replied' });
  });

  it('applies each control command once and in order; cancel and supersede stop it', () => {
    expect(controlEffect(state(), control('interrupt', 1))).toEqual({ kind: 'ignore' });
    expect(controlEffect(state(), control('interrupt', 2, { eventIds: ['a'] }))).toEqual({
      kind: 'interrupt',
      eventIds: ['a'],
    });
    expect(controlEffect(state(), control('cancel', 2, { reason: 'recalled' }))).toMatchObject({
      kind: 'stop',
      end: { outcome: 'cancelled', reason: 'recalled' },
    });
    expect(controlEffect(state(), control('supersede', 3, { supersededBy: 'ep2' }))).toMatchObject({
      kind: 'stop',
      end: { outcome: 'superseded', cause: 'superseded' },
    });
    expect(controlEffect(state(), control('resume', 2))).toEqual({ kind: 'advance' });
  });

  it('caps consecutive interrupts', () => {
    expect(interruptible(state({ interruptsInARow: 1 }), 2)).toBe(true);
    expect(interruptible(state({ interruptsInARow: 2 }), 2)).toBe(false);
    expect(interruptible(state(), 0)).toBe(false);
  });

  it('merges new messages once, in the order given, and counts their senders among the addressees', () => {
    const later = line('102', '20003', { sentAt: NOW / 1000 + 5, role: 'admin' });
    const earlier = line('101', '20002', { sentAt: NOW / 1000 + 1 });
    const { state: merged, added } = mergeMessages(state(), [earlier, later, line('100'), earlier]);
    expect(added.map((l) => l.messageId)).toEqual(['101', '102']);
    expect(merged.history.map((e) => (e as ChatLine).messageId)).toEqual(['100', '101', '102']);
    expect(merged.addressees.map((a) => a.userId)).toEqual(['20001', '20002', '20003']);
    expect(mergeMessages(merged, [later]).added).toEqual([]);
  });

  it('gates tools by the lowest role among the addressees; only configured owners are owner', () => {
    const admins = state({ addressees: [{ messageId: '1', userId: '1', role: 'admin' }] });
    expect(effectiveRole(admins, new Set())).toBe('admin');
    expect(effectiveRole(state({ addressees: [{ messageId: '1', userId: '1', role: 'owner' }] }), new Set())).toBe(
      'admin',
    );
    expect(
      effectiveRole(state({ addressees: [{ messageId: '1', userId: '9', role: 'member' }] }), new Set(['9'])),
    ).toBe('owner');
    const mixed = state({
      addressees: [
        { messageId: '1', userId: '9', role: 'admin' },
        { messageId: '2', userId: '2', role: 'member' },
      ],
    });
    expect(effectiveRole(mixed, new Set(['9']))).toBe('member');
  });

  describe('planner answers', () => {
    const history = state().history;
    it('takes a reply to a message of the context', () => {
      expect(decidePlannerAnswer(toolCall('reply', { msg_id: '100', quote: true }), OFFERED, history)).toMatchObject({
        kind: 'reply',
        args: { msg_id: '100', quote: true },
        target: { messageId: '100' },
      });
    });
    it('refuses a reply to a message it has not seen, or to its own', () => {
      expect(decidePlannerAnswer(toolCall('reply', { msg_id: '999' }), OFFERED, history)).toMatchObject({
        kind: 'invalid',
        reason: 'unknown_message',
      });
      const own = [line('5', '10001', { fromSelf: true })];
      expect(decidePlannerAnswer(toolCall('reply', { msg_id: '5' }), OFFERED, own)).toMatchObject({
        kind: 'invalid',
        reason: 'unknown_message',
      });
    });
    it('refuses fields the action does not have (a target smuggled in)', () => {
      const decision = decidePlannerAnswer(toolCall('reply', { msg_id: '100', group_id: '99999' }), OFFERED, history);
      expect(decision).toMatchObject({ kind: 'invalid', reason: 'invalid_arguments' });
      if (decision.kind === 'invalid') expect(decision.hint).toContain('group_id');
    });
    it('validates wait seconds, end reasons, JSON and tool names', () => {
      expect(decidePlannerAnswer(toolCall('wait', { seconds: 30 }), OFFERED, history)).toMatchObject({
        kind: 'wait',
        args: { seconds: 30 },
      });
      expect(decidePlannerAnswer(toolCall('wait', { seconds: 0 }), OFFERED, history)).toMatchObject({
        kind: 'invalid',
      });
      expect(decidePlannerAnswer(toolCall('wait', { seconds: 601 }), OFFERED, history)).toMatchObject({
        kind: 'invalid',
      });
      expect(decidePlannerAnswer(toolCall('no_action', {}), OFFERED, history)).toMatchObject({
        kind: 'end',
        action: 'no_action',
      });
      expect(decidePlannerAnswer(toolCall('finish', { reason: '说完了' }), OFFERED, history)).toMatchObject({
        kind: 'end',
        reason: '说完了',
      });
      expect(decidePlannerAnswer(toolCall('reply', '{"msg_id":'), OFFERED, history)).toMatchObject({
        kind: 'invalid',
        reason: 'bad_json',
      });
      expect(decidePlannerAnswer(toolCall('admin_kick', {}), OFFERED, history)).toMatchObject({
        kind: 'invalid',
        reason: 'unknown_tool',
      });
      expect(decidePlannerAnswer(toolCall('tool_search', { query: 'x' }), OFFERED, history)).toMatchObject({
        kind: 'tool',
      });
      expect(decidePlannerAnswer({ content: '嗯', toolCalls: [] }, OFFERED, history)).toMatchObject({
        kind: 'invalid',
        reason: 'no_tool_call',
      });
    });
  });

  it('lets a wait run only until the deadline', () => {
    expect(waitFits(state(), NOW, 30)).toEqual({ ok: true, maxSeconds: 59 });
    expect(waitFits(state(), NOW + 50_000, 30)).toEqual({ ok: false, maxSeconds: 9 });
  });
});

/** An episode that took in 100, 102, 104 from 20001, 101 from 20002 and the bot's own 103 between them. */
function personsTurn(): ReturnType<typeof state> {
  const lines = [line('100'), line('101', '20002'), line('102'), line('103', '20001', { fromSelf: true }), line('104')];
  return mergeMessages(state({ history: [], addressees: [] }), lines).state;
}

describe('followUpsOf', () => {
  it('is what the answered person said after the target and the episode took in, not others or background', () => {
    const taken = personsTurn();
    const withoutBackground = { ...taken, addressees: taken.addressees.filter((a) => a.messageId !== '104') };
    expect(followUpsOf(withoutBackground, line('100')).map((l) => l.messageId)).toEqual(['102']);
    expect(followUpsOf(taken, line('102')).map((l) => l.messageId)).toEqual(['104']);
    expect(followUpsOf(taken, line('999'))).toEqual([]);
  });
});

describe('earlierOf', () => {
  it('is what the answered person said before the target in the episode that no reply answered yet', () => {
    const taken = personsTurn();
    expect(earlierOf(taken, line('104')).map((l) => l.messageId)).toEqual(['100', '102']);
    // Already answered by an earlier reply of the episode: not answered again.
    expect(earlierOf({ ...taken, answered: ['e100'] }, line('104')).map((l) => l.messageId)).toEqual(['102']);
    // Background (not an addressee) is not part of the person's turn.
    const background = { ...taken, addressees: taken.addressees.filter((a) => a.messageId !== '102') };
    expect(earlierOf(background, line('104')).map((l) => l.messageId)).toEqual(['100']);
    expect(earlierOf(taken, line('100'))).toEqual([]);
    expect(earlierOf(taken, line('999'))).toEqual([]);
  });
});
