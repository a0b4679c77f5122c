import {
  applyMerged,
  factIdFor,
  mergeFact,
  reinforce,
  type FactCandidate,
  type KnownFact,
} from './fact-merge.rules.js';
import { jargonCandidates, jargonMessages, parseJargonVerdicts } from './jargon.rules.js';
import { ExtractionInvalid, HEARSAY_FACTOR, parseExtraction, type ThreadLine } from './memory-extraction.prompt.js';
import { anyWordQuery, queryWords } from './query-words.rules.js';
import { threadFor } from './thread.rules.js';
import { mayCall } from '../budget/budget.rules.js';

const G = '3001';
const NOW = '2026-12-01T10:00:00.000Z';
const candidate = (over: Partial<FactCandidate> = {}): FactCandidate => ({
  subjectUserId: '20001',
  subjectName: '小王',
  category: 'profile',
  key: '专业',
  value: '计算机',
  confidence: 0.6,
  ...over,
});
const known = (c: FactCandidate, over: Partial<KnownFact> = {}): KnownFact => ({
  factId: factIdFor(G, c.subjectUserId, c.key, c.value),
  subjectUserId: c.subjectUserId,
  category: c.category,
  key: c.key,
  value: c.value,
  status: 'active',
  confidence: c.confidence,
  revision: 1,
  sightings: 1,
  ...over,
});

describe('fact merge', () => {
  it('dedups the same fact however it is punctuated, and grows surer', () => {
    const first = mergeFact(G, candidate(), [], NOW);
    expect(first).toMatchObject({ status: 'active', revision: 1, sightings: 1, confidence: 0.6 });
    const again = mergeFact(G, candidate({ value: '计算机！' }), [known(candidate())], NOW);
    expect(again.factId).toBe(first.factId);
    expect(again).toMatchObject({ revision: 2, sightings: 2, confidence: reinforce(0.6, 0.6) });
    expect(again.confidence).toBeCloseTo(0.84);
  });

  it('replaces a single-valued fact with a surer new value, and disputes a weaker one', () => {
    const old = known(candidate({ confidence: 0.6 }));
    const sure = mergeFact(G, candidate({ value: '数学', confidence: 0.8 }), [old], NOW);
    expect(sure).toMatchObject({ status: 'active', replacesFactId: old.factId });
    const weak = mergeFact(G, candidate({ value: '数学', confidence: 0.3 }), [old], NOW);
    expect(weak).toMatchObject({ status: 'disputed' });
    expect(weak.replacesFactId).toBeUndefined();
  });

  it('keeps several values of a many-valued category side by side', () => {
    const hotpot = candidate({ category: 'preference', key: '喜欢的食物', value: '火锅' });
    const bbq = mergeFact(G, { ...hotpot, value: '烧烤' }, [known(hotpot)], NOW);
    expect(bbq).toMatchObject({ status: 'active', revision: 1 });
    expect(bbq.replacesFactId).toBeUndefined();
  });

  it('lets facts of one extraction see each other', () => {
    const a = mergeFact(G, candidate({ confidence: 0.7 }), [], NOW);
    const list = applyMerged([], a);
    const b = mergeFact(G, candidate({ value: '物理', confidence: 0.9 }), list, NOW);
    expect(b.replacesFactId).toBe(a.factId);
    expect(applyMerged(list, b).find((f) => f.factId === a.factId)!.status).toBe('superseded');
  });
});

describe('extraction', () => {
  const lines: ThreadLine[] = [
    { ordinal: 1, eventId: 'e1', userId: '20001', displayName: '小王', text: '我学计算机', fromSelf: false, sentAt: 1 },
    {
      ordinal: 2,
      eventId: 'e2',
      userId: '20002',
      displayName: '小李',
      text: '小王是我室友',
      fromSelf: false,
      sentAt: 2,
    },
    {
      ordinal: 3,
      eventId: 'e3',
      userId: '10001',
      displayName: '林小满',
      text: '小王好像很能吃辣',
      fromSelf: true,
      sentAt: 3,
    },
  ];
  const fact = (over: Record<string, unknown>) => ({
    subject: '20001',
    category: 'profile',
    key: '专业',
    value: '计算机',
    lines: [1],
    ...over,
  });

  it('keeps facts with evidence from people, discounts hearsay, and drops the bot’s own words', () => {
    const out = parseExtraction(
      JSON.stringify({
        summary: '小王学计算机',
        facts: [
          fact({ confidence: 0.9 }),
          fact({ category: 'relationship', key: '室友', value: '小李', related: '20002', lines: [2], confidence: 0.8 }),
          fact({ category: 'preference', key: '口味', value: '能吃辣', lines: [3] }),
          fact({ subject: '10001', key: '身份', value: '机器人' }),
          fact({ lines: [] }),
          fact({ category: 'gossip' }),
        ],
      }),
      lines,
      '10001',
    );
    expect(out.summary).toBe('小王学计算机');
    expect(out.facts.map((f) => [f.key, f.confidence, f.evidenceEventIds])).toEqual([
      ['专业', 0.9, ['e1']],
      ['室友', Math.round(0.8 * HEARSAY_FACTOR * 1000) / 1000, ['e2']],
    ]);
    expect(out.facts[1]!.relatedUserId).toBe('20002');
    expect(out.dropped.map((d) => d.reason)).toEqual(['self_source', 'unknown_subject', 'no_evidence', 'bad_field']);
  });

  it('refuses an answer without a usable summary', () => {
    expect(() => parseExtraction('{', lines, '10001')).toThrow(ExtractionInvalid);
    expect(() => parseExtraction(JSON.stringify({ summary: '', facts: [] }), lines, '10001')).toThrow(/summary/);
  });
});

describe('search words, threads, jargon, budget', () => {
  it('searches with content words only', () => {
    const words = queryWords('小王喜欢吃什么来着？');
    expect(words).toContain('小王');
    expect(words).toContain('喜欢');
    expect(words).not.toContain('什么');
    expect(anyWordQuery(["it's", '火锅'])).toBe("'火锅'");
    expect(anyWordQuery([])).toBeNull();
  });

  it('keeps a group in one thread until a quiet gap, and honours explicit thread ids', () => {
    const gap = 30 * 60_000;
    const first = threadFor(undefined, null, 'e1', 0, gap);
    expect(first).toMatch(/^auto-[0-9a-f]{20}$/);
    expect(threadFor(undefined, { threadId: first, lastAt: 0 }, 'e2', gap, gap)).toBe(first);
    expect(threadFor(undefined, { threadId: first, lastAt: 0 }, 'e3', gap + 1, gap)).not.toBe(first);
    expect(threadFor('t-9', { threadId: first, lastAt: 0 }, 'e4', 1, gap)).toBe('t-9');
  });

  it('asks about words specific to the group', () => {
    const uses = [
      { word: '芋圆', docs: 8, users: 3, elsewhere: 0 },
      { word: '作业', docs: 20, users: 5, elsewhere: 200 },
      { word: '12', docs: 30, users: 4, elsewhere: 0 },
      { word: '猫', docs: 9, users: 3, elsewhere: 0 },
    ];
    expect(jargonCandidates(uses, { group: 100, others: 1000 }, 3).map((u) => u.word)).toEqual(['芋圆']);
  });

  it("asks about a scan's words in one prompt and keeps only usable verdicts on words it asked about", () => {
    const [, user] = jargonMessages([
      { term: '芋圆', examples: ['芋圆又来蹭饭了', '今天没见到芋圆'] },
      { term: '开黑', examples: ['晚上开黑吗'] },
    ]);
    expect(user!.content).toContain('词：芋圆\n群里的例句：\n1. 芋圆又来蹭饭了\n2. 今天没见到芋圆');
    expect(user!.content).toContain('词：开黑\n群里的例句：\n1. 晚上开黑吗');

    const asked = ['芋圆', '开黑', '摸鱼'];
    const answer = (verdicts: unknown): string => JSON.stringify({ verdicts });
    expect(
      parseJargonVerdicts(
        answer([
          { term: ' 芋圆 ', is_jargon: true, meaning: '宿舍楼下的橘猫' },
          { term: '开黑', is_jargon: false, meaning: '' },
          { term: '芋圆', is_jargon: false, meaning: '又一条' },
          { term: '奶茶', is_jargon: true, meaning: '没问过的词' },
          { term: '摸鱼', is_jargon: true, meaning: '' },
          null,
        ]),
        asked,
      ),
    ).toEqual({
      verdicts: [
        { term: '芋圆', isJargon: true, meaning: '宿舍楼下的橘猫' },
        { term: '开黑', isJargon: false, meaning: '普通词语' },
      ],
      unusable: 4,
    });
    expect(parseJargonVerdicts(answer([]), asked)).toEqual({ verdicts: [], unusable: 0 });
    expect(parseJargonVerdicts(JSON.stringify({ is_jargon: true, meaning: '旧的单词格式' }), asked)).toBeNull();
    expect(parseJargonVerdicts('{"verdicts": [', asked)).toBeNull();
    expect(parseJargonVerdicts('null', asked)).toBeNull();
  });

  it('caps calls and tokens per window', () => {
    const caps = { callsPerHour: 2, tokensPerHour: 1000 };
    expect(mayCall({ calls: 1, tokens: 999 }, caps)).toBe(true);
    expect(mayCall({ calls: 2, tokens: 0 }, caps)).toBe(false);
    expect(mayCall({ calls: 0, tokens: 1000 }, caps)).toBe(false);
  });
});
