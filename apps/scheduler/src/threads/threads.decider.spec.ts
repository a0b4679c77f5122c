import { EventKind } from '@app/contracts';
import { completed, fact, fired, message, ofType, Scenario, started, T0 } from '../decisions/decider.fixture.js';
import { DEFAULT_THREAD_SETTINGS } from './thread-linking.js';

/* Threads and the group actor through the decider: linking, the bot's reply joining, idle timers on product time. */

const IDLE = DEFAULT_THREAD_SETTINGS.idleMs;

function sent(episodeId: string, triggerEventId: string, at: number, onebotMessageId = 'bot-1') {
  return fact(
    EventKind.MessageSent,
    {
      actionId: `a-${episodeId}`,
      episodeId,
      triggerEventId,
      targetType: 'group',
      targetId: '40001',
      segmentIndex: 0,
      segmentCount: 1,
      text: '化毛膏试试',
      attempts: 1,
      onebotMessageId,
    },
    at,
  );
}

describe('threads and the group actor in the decider', () => {
  it('links each message into a thread, says so in its linked transition, and arms the thread’s idle timer', () => {
    const s = new Scenario();
    const first = message('alice', '猫咪吐毛球怎么办', { at: T0 });
    s.when(first).then((effects, state) => {
      const linked = ofType(effects, 'moved')
        .flatMap((m) => m.transitions)
        .find((t) => t.to === 'linked');
      expect(linked?.reason).toBe(`linked: thread t-${first.id} (a new thread)`);
      expect(Object.keys(state.threads)).toEqual([`t-${first.id}`]);
      expect(ofType(effects, 'timerSet').map((t) => [t.timer.purpose, t.timer.dueAt - T0])).toContainEqual([
        'thread_idle',
        IDLE,
      ]);
      expect(ofType(effects, 'moved').find((m) => m.decision)?.decision?.threadId).toBe(`t-${first.id}`);
    });
    const second = message('bob', '我家猫也是', { at: T0 + 10_000 });
    s.when(second).then((effects, state) => {
      expect(ofType(effects, 'moved').find((m) => m.decision)?.decision?.threadId).toBe(`t-${first.id}`);
      expect(state.threads[`t-${first.id}`]).toMatchObject({ participants: ['alice', 'bob'], messages: 2 });
    });
  });

  it('an idle timer moves on while the thread is active, and the thread idles after a quiet gap', () => {
    const s = new Scenario();
    const first = message('alice', '周末去爬山吗', { at: T0 });
    s.given(first, message('bob', '去！', { at: T0 + 30_000 }));
    const threadId = `t-${first.id}`;
    s.when(fired(s.timer('thread_idle'), T0 + IDLE)).then((effects, state) => {
      expect(ofType(effects, 'threadIdle')).toEqual([]);
      expect(ofType(effects, 'timerSet').map((t) => t.timer.dueAt)).toEqual([T0 + 30_000 + IDLE]);
      expect(state.threads[threadId]).toBeDefined();
    });
    s.when(fired(s.timer('thread_idle'), T0 + 30_000 + IDLE)).then((effects, state) => {
      expect(ofType(effects, 'threadIdle').map((e) => e.thread.id)).toEqual([threadId]);
      expect(state.threads).toEqual({});
    });
    // After the idle gap a new message starts a new thread.
    const later = message('alice', '今天下雨了', { at: T0 + 2 * IDLE });
    s.when(later).then((_effects, state) => expect(Object.keys(state.threads)).toEqual([`t-${later.id}`]));
  });

  it('the bot’s delivered reply joins the thread it answers and counts for the group actor', () => {
    const s = new Scenario();
    const ask = message('alice', '猫咪吐毛球怎么办？', { direct: 'at', at: T0 });
    s.given(ask);
    s.given({ event: fired(s.timer('debounce')), at: T0 + 800 });
    const episodeId = ofType(s.all, 'episodeOffered')[0]!.episode.id;
    s.given(started(episodeId, T0 + 900));
    s.when(sent(episodeId, ask.id, T0 + 3000, 'bot-77')).then((effects, state) => {
      const actor = ofType(effects, 'actor').find((a) => a.reason !== undefined);
      expect(actor?.reason).toBe(`replied to alice in t-${ask.id}`);
      expect(state.actor).toMatchObject({ lastBotReplyAt: T0 + 3000, lastPartnerId: 'alice', messagesSinceReply: 0 });
      expect(state.threads[`t-${ask.id}`]).toMatchObject({
        botJoined: true,
        botPartner: 'alice',
        lastBotAt: T0 + 3000,
        openQuestions: [],
      });
      expect(state.threads[`t-${ask.id}`]!.participants).toEqual(['alice', 'self']);
    });
    // Someone quotes the bot's reply minutes later: the quote goes back to that thread.
    const quote = message('carol', '真的有用吗', { at: T0 + 5 * 60_000, replyTo: 'bot-77' });
    s.when(quote).then((effects) => {
      const linked = ofType(effects, 'moved')
        .flatMap((m) => m.transitions)
        .find((t) => t.to === 'linked');
      expect(linked?.reason).toBe(`linked: thread t-${ask.id} (reply chain)`);
    });
    s.given(completed(episodeId, 'replied', T0 + 3100));
  });
});
