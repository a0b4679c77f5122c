import { initialActor, recordReply, type TalkSettings } from '../actors/group-actor.js';
import { botReplied, joinThread, type LinkInput, type ThreadState } from '../threads/thread-linking.js';
import {
  budgetSpent,
  interestIndex,
  keywordHits,
  lowInformation,
  novelty,
  personaInterest,
  questionUrgency,
  recentlyReplied,
  silence,
  socialObligation,
  threadContinuity,
} from './features.js';

const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const TALK: TalkSettings = { talkValue: 0.45, adjust: 1, windowMs: 30 * 60_000, budget: 3, cooldownMs: 75_000 };

function said(sender: string, text: string, at = T0, n = 1): LinkInput {
  return { eventId: `e${n}`, messageId: `m${n}`, senderId: sender, text, at, atUserIds: [], addressesBot: false };
}

function thread(...inputs: LinkInput[]): ThreadState {
  return inputs.reduce<ThreadState | undefined>((t, input) => joinThread(t, 't-e1', input), undefined)!;
}

describe('attention features', () => {
  const interests = interestIndex(['猫（尤其是楼下的橘猫芋圆）', '考试周的各种求生技巧', '独立音乐和民谣']);

  it('persona interest: a message about the persona’s interests, and which one', () => {
    expect(personaInterest('有人知道猫咪吐毛球怎么办吗', interests)).toEqual({ value: 0.7, note: 'about 猫' });
    expect(personaInterest('考试周怎么熬夜不困啊？', interests).value).toBeGreaterThan(0);
    expect(personaInterest('今天食堂的饭好难吃', interests).value).toBe(0);
    expect(personaInterest('最近在听什么民谣', interests).note).toBe('about 民谣');
  });

  it('question / urgency: ？, 吗, question words and urgent asks', () => {
    expect(questionUrgency('这个怎么弄？').value).toBe(1);
    expect(questionUrgency('你们去吗').value).toBe(1);
    expect(questionUrgency('有没有人用过那个软件').value).toBe(0.6);
    expect(questionUrgency('谁知道明天几点集合').value).toBe(0.6);
    expect(questionUrgency('救命 电脑蓝屏了').note).toBe('an urgent ask');
    expect(questionUrgency('今天好热').value).toBe(0);
  });

  it('low information: 哈哈, 草, +1, 6, 。。。 and emoji never count as something to answer', () => {
    for (const chatter of [
      '哈哈哈哈',
      '草',
      '+1',
      '6',
      '666',
      '。。。',
      '😂😂',
      '[动画表情]',
      'hhhh',
      '确实',
      '笑死',
    ]) {
      expect([chatter, lowInformation([chatter])]).toEqual([chatter, true]);
    }
    expect(lowInformation(['哈哈', '猫咪吐了怎么办'])).toBe(false);
    expect(lowInformation(['草 这题怎么做'])).toBe(false);
  });

  it('thread continuity: the bot’s partner going on is a follow-up, others in its thread count half', () => {
    const t = botReplied(thread(said('alice', '猫咪吐了怎么办')), {
      at: T0 + 10_000,
      partnerId: 'alice',
      text: '多喂点化毛膏',
    });
    expect(threadContinuity(t, 'alice', T0 + 40_000)).toEqual({
      value: 1,
      note: 'follow-up from the person it is talking with',
    });
    expect(threadContinuity(t, 'bob', T0 + 40_000).value).toBe(0.5);
    expect(threadContinuity(t, 'alice', T0 + 60 * 60_000).value).toBe(0);
    expect(threadContinuity(thread(said('alice', '猫')), 'alice', T0).value).toBe(0);
  });

  it('social obligation: an open question grows with its age and ends when someone else answers', () => {
    const asked = thread(said('alice', '有人知道猫咪吐毛球怎么办吗'));
    expect(socialObligation(asked, 'alice', T0 + 45_000, 45_000)).toEqual({
      value: 1,
      note: 'nobody answered in 45 s',
    });
    expect(socialObligation(asked, 'alice', T0 + 22_500, 45_000).value).toBeCloseTo(0.5);
    const answered = joinThread(asked, asked.id, said('bob', '喂化毛膏就行', T0 + 5000, 2));
    expect(socialObligation(answered, 'alice', T0 + 45_000, 45_000).value).toBe(0);
    const chatterOnly = joinThread(asked, asked.id, said('bob', '哈哈哈', T0 + 5000, 2));
    expect(socialObligation(chatterOnly, 'alice', T0 + 45_000, 45_000).value).toBe(1);
  });

  it('silence: only a long quiet counts, and only a little', () => {
    expect(silence(undefined).value).toBe(0);
    expect(silence(60_000).value).toBe(0);
    expect(silence(30 * 60_000)).toEqual({ value: 1, note: 'after 30 min of quiet' });
  });

  it('novelty: a batch that starts its thread is a new topic', () => {
    expect(novelty(thread(said('alice', '新番好看吗')), 1, '新番好看吗').value).toBe(1);
    const t = thread(said('alice', '新番好看吗'), said('bob', '新番还行', T0 + 1000, 2));
    expect(novelty(t, 1, '新番还行').value).toBe(0);
    expect(novelty(undefined, 1, '哈哈').value).toBe(0);
  });

  it('keyword hits: weight × confidence, summed and capped, naming the strongest', () => {
    const hit = (term: string, weight: number, confidence = 1) => ({
      termId: term,
      term,
      scope: 'group' as const,
      scopeId: 'g',
      weight,
      confidence,
      start: 0,
      end: 1,
    });
    expect(keywordHits([])).toEqual({ value: 0 });
    expect(keywordHits([hit('芋圆', 0.6), hit('橘猫', 0.3, 0.5)])).toEqual({ value: 0.75, note: 'keyword 芋圆' });
    expect(keywordHits([hit('a', 0.9), hit('b', 0.9)]).value).toBe(1);
    // Terms seeded from the persona's interests are scored by the interest feature already.
    expect(keywordHits([{ ...hit('猫', 0.9), source: 'persona' as const }])).toEqual({ value: 0 });
    expect(keywordHits([{ ...hit('猫', 0.9), source: 'persona' as const }, hit('芋圆', 0.6)])).toEqual({
      value: 0.6,
      note: 'keyword 芋圆',
    });
  });

  it('recently replied: full during the cooldown, then until the talk-frequency threshold is met', () => {
    const actor = recordReply(initialActor(), { at: T0, partnerId: 'alice', threadId: 't' }, TALK);
    expect(recentlyReplied(actor, T0 + 40_000, TALK, false)).toEqual({ value: 1, note: 'replied 40 s ago' });
    expect(recentlyReplied(actor, T0 + 40_000, TALK, true).value).toBe(0);
    const after = { ...actor, messagesSinceReply: 1 };
    const f = recentlyReplied(after, T0 + 80_000, TALK, false);
    expect(f.value).toBeCloseTo(2 / 3);
    expect(f.note).toBe('1 of 3 messages since its last reply');
    expect(recentlyReplied({ ...actor, messagesSinceReply: 3 }, T0 + 80_000, TALK, false).value).toBe(0);
    // Empty-window compensation: a quiet counts as messages, one per average reply gap (30 min / 3 = 10 min).
    expect(recentlyReplied(actor, T0 + 20 * 60_000, TALK, false).value).toBeCloseTo(1 / 3);
    expect(recentlyReplied(actor, T0 + 30 * 60_000, TALK, false).value).toBe(0);
  });

  it('budget spent: the share of the window’s replies used', () => {
    expect(budgetSpent(0, 3).value).toBe(0);
    expect(budgetSpent(1, 3).value).toBeCloseTo(1 / 3);
    expect(budgetSpent(3, 3)).toEqual({ value: 1, note: '3/3 replies this window' });
  });
});
