import { EventKind } from '@app/contracts';
import type { AttentionPolicy, AttentionVerdict } from './attention.policy.js';
import { KEYWORD_WAKE_BUDGET } from './event.decider.js';
import { fact, finalStates, message, ofType, Scenario, SETTINGS, T0 } from './decider.fixture.js';

/**
 * A lexicon that learned a word: attention snoozes what it cannot place yet, and engages once the word is known.
 * The version it judged with is the lexicon's version at the time.
 */
class LearningAttention implements AttentionPolicy {
  readonly considersAmbient = true;
  version = '1';
  known = new Set<string>();

  judge(input: Parameters<AttentionPolicy['judge']>[0]): AttentionVerdict {
    const text = input.fragments.map((f) => f.message.text).join(' ');
    if ([...this.known].some((word) => text.includes(word))) {
      return { outcome: 'deliberate', reason: 'deliberate: a word it knows now', features: { score: 0.8 } };
    }
    return {
      outcome: 'snooze',
      reason: 'snoozed: nothing it knows yet',
      features: { score: 0.5 },
      snoozeUntil: input.now + 60_000,
      keywordVersion: this.version,
    };
  }

  keywordVersionFor(): string {
    return this.version;
  }
}

const versioned = (at = T0 + 5_000) =>
  fact(
    EventKind.KeywordLexiconVersioned,
    { scope: 'group', ownerId: '40001', version: 2, terms: 1, changedTermIds: ['t1'] },
    at,
  );

describe('a keyword lexicon change', () => {
  it('judges snoozed batches again at once when the version they were judged with moved on', () => {
    const attention = new LearningAttention();
    const s = new Scenario(attention, { ...SETTINGS, debounceQuietMs: 0 });
    const ask = message('alice', '有人玩过丝之歌吗', { at: T0 });
    s.given(ask);
    expect(s.state.events[ask.id]?.state).toBe('snoozed');

    attention.known.add('丝之歌');
    attention.version = '2';
    s.when(versioned()).then((effects, state) => {
      expect(finalStates(effects)[ask.id]).toBe('eligible');
      expect(ofType(effects, 'episodeOffered')).toHaveLength(1);
      expect(ofType(effects, 'timerCancelled').map((c) => c.purpose)).toContain('snooze');
      expect(Object.keys(state.snoozed)).toEqual([]);
    });
  });

  it('leaves batches judged with the current version to their timers', () => {
    const attention = new LearningAttention();
    const s = new Scenario(attention, { ...SETTINGS, debounceQuietMs: 0 });
    const ask = message('alice', '有人玩过丝之歌吗', { at: T0 });
    s.given(ask);
    s.when(versioned()).then((effects, state) => {
      expect(ofType(effects, 'moved')).toEqual([]);
      expect(Object.keys(state.snoozed)).toHaveLength(1);
    });
  });

  it(`wakes at most ${KEYWORD_WAKE_BUDGET} batches per change, so an update never sets off a burst`, () => {
    const attention = new LearningAttention();
    const s = new Scenario(attention, { ...SETTINGS, debounceQuietMs: 0 });
    const asks = ['alice', 'bob', 'carol', 'dave'].map((who, i) =>
      message(who, `${who} 问：丝之歌好玩吗`, { at: T0 + i * 10, thread: `th${i}` }),
    );
    s.given(...asks);
    expect(Object.keys(s.state.snoozed)).toHaveLength(asks.length);

    attention.known.add('丝之歌');
    attention.version = '2';
    s.when(versioned()).then((effects, state) => {
      expect(ofType(effects, 'episodeOffered')).toHaveLength(KEYWORD_WAKE_BUDGET);
      expect(Object.keys(state.snoozed)).toHaveLength(asks.length - KEYWORD_WAKE_BUDGET);
    });
  });
});
