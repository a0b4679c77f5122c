import { agePool, emptyPool, type CandidatePool } from './candidate-pool.rules.js';
import {
  groupSet,
  learnFromMessage,
  learnFromSummary,
  maintainIfDue,
  seedInterests,
  threadSet,
  GLOBAL_SET,
} from './keyword-learning.js';
import { keywordEvents, LexiconDraft, type LoadedSet } from './lexicon-draft.js';
import { DEFAULT_LEXICON_POLICY as POLICY, setKeyOf } from './lexicon.rules.js';
import { compileSet, visibleSets } from './live-keyword-lookup.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');
const HOUR = 3_600_000;

/** A tiny in-memory lexicon: drafts over these sets, committed back the way the store would. */
class Lexicon {
  readonly sets = new Map<string, LoadedSet>();
  readonly pools = new Map<string, CandidatePool>();
  events: string[] = [];

  run(change: (draft: LexiconDraft) => void, now: number, cause = `c${this.events.length}`) {
    const draft = new LexiconDraft(new Map([...this.sets].map(([k, s]) => [k, { ...s, terms: new Map(s.terms) }])));
    change(draft);
    const commit = draft.commit(now);
    for (const set of commit.sets) {
      const current = this.sets.get(set.setKey) ?? { ref: set.ref, meta: null, terms: new Map() };
      for (const t of set.upserts) current.terms.set(t.termId, t);
      for (const id of set.removals) current.terms.delete(id);
      this.sets.set(set.setKey, { ...current, meta: set.meta });
    }
    const events = keywordEvents(commit, cause, undefined, now);
    this.events.push(...events.map((e) => e.kind));
    return { commit, events };
  }

  say(groupId: string, senderId: string, words: string[], now: number) {
    return this.run((draft) => {
      const pool = this.pools.get(groupId) ?? emptyPool();
      const learned = learnFromMessage(draft, pool, { groupId, senderId, words }, now, POLICY);
      this.pools.set(groupId, learned.needsAging ? agePool(learned.pool) : learned.pool);
    }, now);
  }

  hits(text: string, context: Parameters<typeof visibleSets>[0]): string[] {
    const out: string[] = [];
    for (const key of visibleSets(context)) {
      const set = this.sets.get(key);
      if (!set) continue;
      const hits: Parameters<ReturnType<typeof compileSet>['matchInto']>[1] = [];
      compileSet(key, set.meta?.version ?? 0, [...set.terms.values()]).matchInto(text, hits);
      out.push(...hits.map((h) => `${h.scope}:${h.scopeId}:${h.term}`));
    }
    return out.sort();
  }
}

describe('keyword learning', () => {
  it('promotes a group word after three messages by two people, into that group only', () => {
    const lexicon = new Lexicon();
    lexicon.say('g1', 'alice', ['开黑'], T0);
    lexicon.say('g1', 'alice', ['开黑'], T0 + 1);
    expect(lexicon.hits('来开黑', { groupId: 'g1' })).toEqual([]);
    const { events } = lexicon.say('g1', 'bob', ['开黑'], T0 + 2);
    expect(events.map((e) => e.kind)).toEqual(['keyword.term.changed', 'keyword.lexicon.versioned']);
    expect(events[0]!.groupId).toBe('g1');
    expect(lexicon.hits('来开黑', { groupId: 'g1' })).toEqual(['group:g1:开黑']);
    expect(lexicon.hits('来开黑', { groupId: 'g2' })).toEqual([]);
    expect(lexicon.hits('来开黑', { groupId: null })).toEqual([]);
  });

  it('does not promote one person\u2019s habit, nor chatter however often it is said', () => {
    const lexicon = new Lexicon();
    for (let i = 0; i < 10; i++) lexicon.say('g1', 'alice', ['口头禅'], T0 + i);
    for (let i = 0; i < 10; i++) lexicon.say('g1', i % 2 ? 'alice' : 'bob', ['哈哈哈', '666'], T0 + i);
    expect(lexicon.sets.get('group:g1')?.terms.size ?? 0).toBe(0);
  });

  it('keeps every group\u2019s word in its own set, even when every group says it, and never in the global one', () => {
    const lexicon = new Lexicon();
    for (const g of ['g1', 'g2', 'g3', 'g4']) {
      for (const who of ['a', 'b', 'a']) lexicon.say(g, who, ['芋圆'], T0);
    }
    expect(lexicon.hits('芋圆来了', { groupId: 'g3' })).toEqual(['group:g3:芋圆']);
    expect(lexicon.sets.get(setKeyOf(GLOBAL_SET))).toBeUndefined();
  });

  it('keeps a summary\u2019s words in its thread of its group, and lets them go with the thread', () => {
    const lexicon = new Lexicon();
    lexicon.run((d) => learnFromSummary(d, { groupId: 'g1', threadId: 't1', words: ['主板'] }, T0, POLICY), T0);
    expect(lexicon.hits('主板坏了', { groupId: 'g1', threadId: 't1' })).toEqual(['thread:t1:主板']);
    expect(lexicon.hits('主板坏了', { groupId: 'g1', threadId: 't2' })).toEqual([]);
    expect(lexicon.hits('主板坏了', { groupId: 'g2', threadId: 't1' })).toEqual([]);
    const later = T0 + 7 * HOUR;
    lexicon.run((d) => maintainIfDue(d, threadSet('g1', 't1'), later, POLICY), later);
    expect(lexicon.hits('主板坏了', { groupId: 'g1', threadId: 't1' })).toEqual([]);
  });

  it('moves a set\u2019s version once per commit, and only when something in it changed', () => {
    const lexicon = new Lexicon();
    lexicon.run((d) => seedInterests(d, ['天文', '原神'], T0, POLICY), T0);
    expect(lexicon.sets.get('global:')!.meta!.version).toBe(1);
    lexicon.run((d) => seedInterests(d, ['天文', '原神'], T0 + HOUR, POLICY), T0 + HOUR);
    expect(lexicon.sets.get('global:')!.meta!.version).toBe(1);
    lexicon.run((d) => seedInterests(d, ['天文'], T0 + 2 * HOUR, POLICY), T0 + 2 * HOUR);
    expect(lexicon.sets.get('global:')!.meta!.version).toBe(2);
    expect(lexicon.hits('原神启动', { groupId: 'g1' })).toEqual([]);
    expect(lexicon.hits('看天文', { groupId: 'g1' })).toEqual(['global::天文']);
  });

  it('derives the same event ids when the same cause is handled again', () => {
    const a = new Lexicon();
    const b = new Lexicon();
    const run = (l: Lexicon) => l.run((d) => seedInterests(d, ['天文'], T0, POLICY), T0, 'seed:v1');
    expect(run(a).events.map((e) => e.id)).toEqual(run(b).events.map((e) => e.id));
    expect(groupSet('g1')).toEqual({ scope: 'group', ownerId: 'g1' });
  });
});
