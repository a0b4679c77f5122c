import { join } from 'node:path';
import { loadPersona, parsePersona, type PersonaPolicy } from '@app/persona';
import type { KeywordContext, KeywordHit, KeywordLookup } from '../keywords/keyword-lookup.js';
import { emptyKeywordLookup } from '../keywords/keyword-lookup.js';
import { Chat } from './chat.fixture.js';
import { ScoredAttention } from './scored-attention.policy.js';

/*
 * Engagement on scripted group chats, through the decider (issue 7): open questions in the persona's interests
 * engage it, chatter never does, a follow-up from the person it is talking with continues without @, replies
 * stay within budget, the persona decides reply vs wait, keywords raise attention, every decision has a reason.
 */

const persona = loadPersona(join(process.cwd(), 'personas/default.yaml'));
const CAT_GROUP = '810001';
const QUIET_GROUP = '810002';

function withOverrides(overrides: Record<string, unknown>, base: PersonaPolicy = persona): PersonaPolicy {
  const { groupOverrides: _ignored, ...rest } = base;
  return parsePersona({ ...JSON.parse(JSON.stringify(rest)), groupOverrides: overrides });
}

/** A lexicon of fixed terms in one group (the real one lives in `keywords/`). */
function lexicon(groupId: string, terms: Record<string, number>): KeywordLookup {
  return {
    versionFor: () => '1',
    match(text: string, context: KeywordContext): KeywordHit[] {
      if (context.groupId !== groupId) return [];
      return Object.entries(terms)
        .filter(([term]) => text.includes(term))
        .map(([term, weight]) => ({
          termId: `k-${term}`,
          term,
          scope: 'group' as const,
          scopeId: groupId,
          weight,
          confidence: 1,
          start: text.indexOf(term),
          end: text.indexOf(term) + term.length,
        }));
    },
  };
}

const CHATTER = ['哈哈哈哈', '草', '+1', '6', '。。。', '😂😂😂', '[动画表情]', '笑死', '确实'];

describe('engagement on a scripted multi-group chat', () => {
  const attention = new ScoredAttention(
    withOverrides({ [QUIET_GROUP]: { attention: { onlyWhenCalled: true } } }),
    emptyKeywordLookup,
  );

  it('an unanswered open question in its interests engages it; chatter never does; the follow-up goes on without @', () => {
    const cats = new Chat(attention, CAT_GROUP);
    const quiet = new Chat(attention, QUIET_GROUP);
    const question = cats.say('alice', '有人知道猫咪吐毛球怎么办吗？', 0);
    const sameInQuiet = quiet.say('alice', '有人知道猫咪吐毛球怎么办吗？', 0);
    const chatter = CHATTER.map((text, i) => cats.say(`p${i}`, text, 5 + i));
    const chatterQuiet = CHATTER.map((text, i) => quiet.say(`p${i}`, text, 5 + i));
    cats.runUntil(30);

    // It waits first: someone else may answer.
    expect(cats.decisionOf(question).outcome).toBe('snooze');
    expect(cats.decisionOf(question).reason).toMatch(/^snoozed: .*about 猫.*look again in 42 s\)$/);
    cats.runUntil(60);
    expect(cats.repliedTo(question)).toBe(true);
    expect(cats.decisionOf(question).reason).toMatch(
      /^deliberate: 0\.\d\d ≥ 0\.67 \(nobody answered in 4\d s, about 猫/,
    );
    for (const c of chatter) {
      expect(cats.decisionOf(c)).toMatchObject({ outcome: 'skip' });
      expect(cats.decisionOf(c).reason).toMatch(/^skipped: chatter/);
    }

    // A follow-up of the person it answered, no @ and no quote: it continues the conversation at once.
    const followUp = cats.say('alice', '那要不要带去医院呀？', 70);
    const hers = cats.say('alice', '哈哈哈', 90);
    cats.runUntil(100);
    expect(cats.decisionOf(followUp).outcome).toBe('deliberate');
    expect(cats.decisionOf(followUp).reason).toContain('follow-up from the person it is talking with');
    expect(cats.decisionOf(followUp).threadId).toBe(cats.decisionOf(question).threadId);
    expect(cats.decisionOf(hers).reason).toMatch(/^skipped: chatter/);

    // A group where the bot only speaks when called: the same question is recorded, an @ is answered.
    quiet.runUntil(100);
    expect(quiet.decisionOf(sameInQuiet).reason).toBe('skipped: in this group the bot speaks only when called');
    expect(chatterQuiet.every((c) => quiet.decisionOf(c).outcome === 'skip')).toBe(true);
    const called = quiet.say('alice', '@林小满 你知道吗', 110, { direct: 'at' });
    quiet.runUntil(120);
    expect(quiet.repliedTo(called)).toBe(true);
    expect(quiet.replies).toHaveLength(1);
  });

  it('one thread does not flood: follow-ups stop at the reply budget, others wait out the cooldown', () => {
    const chat = new Chat(attention, CAT_GROUP);
    const asks = [
      '猫咪吐毛球怎么办？',
      '那化毛膏去哪买呀？',
      '一天喂几次呀？',
      '那猫草有用吗？',
      '还有别的办法吗？',
      '要不要去医院呀？',
    ].map((text, i) => chat.say('alice', text, i * 20, { direct: i === 0 ? 'name' : undefined }));
    const other = chat.say('bob', '我家猫也吐，有人知道猫粮换哪个牌子好吗？', 65);
    chat.runUntil(200);
    const budget = attention.talk(CAT_GROUP).budget;
    expect(chat.replies.length).toBeLessThanOrEqual(budget);
    expect(chat.repliedTo(asks[0]!)).toBe(true);
    const refused = asks.filter((a) => !chat.repliedTo(a));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.some((a) => chat.decisionOf(a).reason.startsWith('skipped: reply budget spent'))).toBe(true);
    // Bob asked while the bot was busy with alice: not answered at once (cooldown / budget), and said why.
    expect(chat.decisionOf(other).reason).toMatch(/replied \d+ s ago|reply budget spent|of \d messages/);
  });

  it('the persona decides reply vs wait: an eager one answers at once, a patient one waits and lets others answer', () => {
    const eager = new ScoredAttention(withOverrides({}, { ...persona, participationBias: 0.95 }), emptyKeywordLookup);
    const fast = new Chat(eager, CAT_GROUP);
    const asked = fast.say('alice', '有人知道猫咪吐毛球怎么办吗？', 0);
    fast.runUntil(10);
    expect(fast.decisionOf(asked).outcome).toBe('deliberate');

    const patient = new Chat(attention, CAT_GROUP);
    const q = patient.say('alice', '有人知道猫咪吐毛球怎么办吗？', 0);
    const answer = patient.say('bob', '喂点化毛膏就好了，我家猫也这样', 15);
    patient.runUntil(120);
    expect(patient.repliedTo(q)).toBe(false);
    expect(patient.decisionOf(q).outcome).toBe('skip');
    expect(patient.decisionOf(answer).outcome).toBe('skip');
  });

  it('keywords raise attention: a question with a lexicon term engages it, the same question without does not', () => {
    const text = '周五有人去剧本杀吗？';
    const plain = new Chat(attention, CAT_GROUP);
    const a = plain.say('alice', text, 0);
    plain.runUntil(120);
    expect(plain.repliedTo(a)).toBe(false);
    expect(plain.decisionOf(a).reason).toContain('no keyword');

    const lexical = new ScoredAttention(persona, lexicon(CAT_GROUP, { 剧本杀: 0.9 }));
    const chat = new Chat(lexical, CAT_GROUP);
    const b = chat.say('alice', text, 0);
    // It waits first; the snoozed batch remembers the lexicon version it was judged with.
    chat.runUntil(10);
    expect(Object.values(chat.scenario.state.snoozed).map((z) => z.keywordVersion)).toEqual(['1']);
    chat.runUntil(120);
    expect(chat.repliedTo(b)).toBe(true);
    expect(chat.decisionOf(b).reason).toContain('keyword 剧本杀');
    expect(chat.decisionOf(b).keywordHits).toEqual([
      { termId: 'k-剧本杀', term: '剧本杀', scope: 'group', weight: 0.9 },
    ]);

    // Terms of another group never hit here.
    const elsewhere = new Chat(lexical, QUIET_GROUP);
    const c = elsewhere.say('alice', text, 0);
    elsewhere.runUntil(120);
    expect(elsewhere.decisionOf(c).keywordHits).toEqual([]);
  });

  it('keywords raise attention without floods: a burst of keyword questions gets at most the budget', () => {
    const lexical = new ScoredAttention(persona, lexicon(CAT_GROUP, { 剧本杀: 1 }));
    const chat = new Chat(lexical, CAT_GROUP);
    for (let i = 0; i < 12; i++) chat.say(`u${i}`, `剧本杀第${i}场谁来？`, i * 10);
    chat.runUntil(600);
    expect(chat.replies.length).toBeGreaterThan(0);
    expect(chat.replies.length).toBeLessThanOrEqual(lexical.talk(CAT_GROUP).budget);
  });

  it('every decision has a reason a person understands, its thread and its keyword hits', () => {
    const chat = new Chat(attention, CAT_GROUP);
    const lines = ['今天好热', '有人知道猫咪吐毛球怎么办吗？', '哈哈', '考试周怎么熬夜不困啊？', '6', '我也是'];
    lines.forEach((text, i) => chat.say(`u${i}`, text, i * 7));
    chat.say('u9', '@林小满 在吗', 50, { direct: 'at' });
    chat.runUntil(300);
    expect(chat.decisions.size).toBeGreaterThanOrEqual(lines.length + 1);
    for (const d of chat.decisions.values()) {
      expect(d.reason).toMatch(/^(deliberate|skipped|snoozed|expired|replied): \S/);
      expect(d.threadId).toMatch(/^t-/);
      expect(Array.isArray(d.keywordHits)).toBe(true);
    }
  });
});
