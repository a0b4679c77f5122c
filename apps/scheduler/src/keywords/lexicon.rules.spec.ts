import { KeywordError, KeywordErrorCode } from './keyword.errors.js';
import {
  controlTerm,
  DEFAULT_LEXICON_POLICY as POLICY,
  feedbackTerm,
  learnTerm,
  maintainSet,
  overCap,
  seedTerm,
  setRef,
  suppressHighFrequency,
  termIdOf,
  type LearnedWord,
  type LexiconTerm,
} from './lexicon.rules.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const group = setRef('group', '111');
const word = (text: string, source: LearnedWord['source'] = 'extracted'): LearnedWord => ({
  text,
  source,
  weight: 0.25,
  confidence: 0.6,
  why: 'said 3 times by 2 people',
});

function learned(text: string, at = T0): LexiconTerm {
  return learnTerm(group, word(text), undefined, at)!.term;
}

describe('lexicon rules', () => {
  it('gives the same text in the same set the same id, and a different id in another set', () => {
    expect(termIdOf(group, '原神')).toBe(termIdOf(setRef('group', '111'), '原神'));
    expect(termIdOf(group, '原神')).not.toBe(termIdOf(setRef('group', '222'), '原神'));
  });

  it('promotes a group word into the group set with a small weight', () => {
    const decision = learnTerm(group, word('原神'), undefined, T0)!;
    expect(decision.change).toBe('promoted');
    expect(decision.term).toMatchObject({ scope: 'group', ownerId: '111', status: 'active', weight: 0.25 });
    expect(decision.reason).toBe('promoted: said 3 times by 2 people');
  });

  it('never lets a word learned in a group into the global or persona sets', () => {
    for (const source of ['extracted', 'jargon', 'summary'] as const) {
      for (const ref of [setRef('global', ''), setRef('persona', 'yuan')]) {
        expect(() => learnTerm(ref, word('芋圆梗', source), undefined, T0)).toThrow(
          expect.objectContaining({ code: KeywordErrorCode.InJokeNotGlobal }),
        );
      }
    }
  });

  it('does not learn stopwords or chatter', () => {
    expect(learnTerm(group, word('哈哈哈'), undefined, T0)).toBeNull();
    expect(learnTerm(group, word('我们'), undefined, T0)).toBeNull();
  });

  it('leaves a suppressed term suppressed when the word comes up again', () => {
    const suppressed = { ...learned('草莓'), status: 'suppressed' as const };
    expect(learnTerm(group, word('草莓'), suppressed, T0 + HOUR)).toBeNull();
  });

  it('seeds persona interests once; a restart with the same interests changes nothing', () => {
    const global = setRef('global', '');
    const first = seedTerm(global, '天文', undefined, T0, POLICY)!;
    expect(first).toMatchObject({ change: 'seeded', term: { source: 'persona', weight: POLICY.seedWeight } });
    expect(seedTerm(global, '天文', first.term, T0 + DAY, POLICY)).toBeNull();
  });

  it('pins, suppresses, adds and deletes on a person\u2019s command', () => {
    const term = learned('原神');
    const pinned = controlTerm(group, { command: 'pin', term: '原神', requestedBy: 'cli' }, term, T0, POLICY);
    expect(pinned).toMatchObject({ change: 'pinned', term: { status: 'pinned', termId: term.termId } });
    const suppressed = controlTerm(
      group,
      { command: 'suppress', term: '新词', requestedBy: 'cli' },
      undefined,
      T0,
      POLICY,
    );
    expect(suppressed.term).toMatchObject({ status: 'suppressed', source: 'operator' });
    const added = controlTerm(
      group,
      { command: 'add', term: 'ＡＰＥＸ', aliases: ['Apex英雄'], weight: 0.9, requestedBy: 'cli' },
      undefined,
      T0,
      POLICY,
    );
    expect(added.term).toMatchObject({ text: 'apex', aliases: ['apex英雄'], weight: 0.9, status: 'active' });
    expect(controlTerm(group, { command: 'delete', term: '原神', requestedBy: 'cli' }, term, T0, POLICY).change).toBe(
      'deleted',
    );
    expect(() =>
      controlTerm(group, { command: 'delete', term: '没有', requestedBy: 'cli' }, undefined, T0, POLICY),
    ).toThrow(KeywordError);
  });

  it('refuses bad scopes and terms with stable codes', () => {
    expect(() => setRef('planet', 'x')).toThrow(expect.objectContaining({ code: KeywordErrorCode.InvalidScope }));
    expect(() => setRef('group', '')).toThrow(expect.objectContaining({ code: KeywordErrorCode.InvalidScope }));
    expect(() => setRef('thread', 'no-group')).toThrow(
      expect.objectContaining({ code: KeywordErrorCode.InvalidScope }),
    );
    expect(() =>
      controlTerm(group, { command: 'add', term: '   ', requestedBy: 'cli' }, undefined, T0, POLICY),
    ).toThrow(expect.objectContaining({ code: KeywordErrorCode.InvalidTerm }));
  });

  it('raises a term that led to a conversation and lowers one that led nowhere; pinned terms stay put', () => {
    const term = learned('原神');
    expect(feedbackTerm(term, 'engaged', T0, POLICY)!.term.weight).toBeCloseTo(0.33);
    expect(feedbackTerm(term, 'ignored', T0, POLICY)!.term.weight).toBeCloseTo(0.21);
    expect(feedbackTerm(term, 'unanswered', T0, POLICY)!.change).toBe('weakened');
    expect(feedbackTerm({ ...term, status: 'pinned' }, 'ignored', T0, POLICY)).toBeNull();
  });

  it('decays unseen learned terms, expires them after the TTL, and never touches pinned or persona terms', () => {
    const fresh = learned('原神', T0);
    const pinned = { ...learned('芋圆', T0), status: 'pinned' as const };
    const persona = { ...learned('天文', T0), source: 'persona' as const };
    const afterHalfLife = maintainSet([fresh, pinned, persona], T0, T0 + 3 * DAY, POLICY);
    expect(afterHalfLife).toEqual([
      expect.objectContaining({ change: 'decayed', term: expect.objectContaining({ weight: 0.125 }) }),
    ]);
    const afterTtl = maintainSet([fresh, pinned, persona], T0, T0 + 15 * DAY, POLICY);
    expect(afterTtl.map((d) => [d.change, d.term.text])).toEqual([['expired', '原神']]);
  });

  it('expires a thread term with its thread, long before a group term', () => {
    const thread = setRef('thread', '111/t1');
    const term = learnTerm(thread, { ...word('显卡', 'summary'), weight: 0.35 }, undefined, T0)!.term;
    expect(maintainSet([term], T0, T0 + 7 * HOUR, POLICY).map((d) => d.change)).toEqual(['expired']);
  });

  it('keeps each set under its cap, evicting the weakest and never a pinned term', () => {
    const policy = { ...POLICY, scopes: { ...POLICY.scopes, group: { ...POLICY.scopes.group, cap: 2 } } };
    const terms = [
      { ...learned('一号'), weight: 0.9 },
      { ...learned('二号'), weight: 0.1, status: 'pinned' as const },
      { ...learned('三号'), weight: 0.2 },
      { ...learned('四号'), weight: 0.5 },
    ];
    expect(overCap(terms, policy).map((d) => [d.change, d.term.text])).toEqual([
      ['evicted', '三号'],
      ['evicted', '四号'],
    ]);
  });

  it('suppresses a learned word said in too large a share of the group\u2019s messages', () => {
    const term = learned('上班');
    expect(suppressHighFrequency(term, 30, 100, POLICY)).toMatchObject({
      change: 'suppressed',
      term: { status: 'suppressed' },
    });
    expect(suppressHighFrequency(term, 10, 100, POLICY)).toBeNull();
    expect(suppressHighFrequency(term, 30, 35, POLICY)).toBeNull();
    expect(suppressHighFrequency({ ...term, source: 'operator' }, 30, 100, POLICY)).toBeNull();
  });

  it('decides the same, in the same order, whatever order a set’s terms were read in', () => {
    const policy = { ...POLICY, scopes: { ...POLICY.scopes, group: { ...POLICY.scopes.group, cap: 3 } } };
    const terms = ['一号', '二号', '三号', '四号', '五号', '六号'].map((text, i) => ({
      ...learned(text, T0 - (i % 2) * DAY),
      weight: 0.4,
    }));
    const decided = (list: LexiconTerm[]) =>
      maintainSet(list, T0, T0 + 2 * DAY, policy).map((d) => [d.change, d.term.termId, d.term.weight]);
    expect(decided([...terms].reverse())).toEqual(decided(terms));
    expect(decided(terms).filter(([change]) => change === 'evicted')).toHaveLength(3);
    expect(overCap([...terms].reverse(), policy)).toEqual(overCap(terms, policy));
  });
});
