import { join } from 'node:path';
import { attentionProfile, loadPersona, type AttentionProfile } from '@app/persona';
import type { Feature } from './features.js';
import { scoreBatch, weightedScore, type FeatureVector } from './scorer.js';

const persona = loadPersona(join(process.cwd(), 'personas/default.yaml'));
const profile: AttentionProfile = attentionProfile(persona, null);

const f = (value: number, note?: string): Feature => (note ? { value, note } : { value });

function vector(
  positive: Partial<FeatureVector['positive']> = {},
  penalties: Partial<FeatureVector['penalties']> = {},
  lowInformation = false,
): FeatureVector {
  const zero = f(0);
  return {
    positive: {
      interest: zero,
      question: zero,
      continuity: zero,
      obligation: zero,
      keyword: zero,
      silence: zero,
      novelty: zero,
      ...positive,
    },
    penalties: { recentlyReplied: zero, budgetSpent: zero, ...penalties },
    lowInformation,
    chatter: '哈哈',
  };
}

const first = { snoozes: 0, worthWaiting: true };

describe('attention scorer', () => {
  it('is the weighted sum of the features minus the penalties, within 0–1', () => {
    const v = vector({ interest: f(1, 'about 猫'), question: f(1, 'a question') }, { recentlyReplied: f(1) });
    const w = profile.weights;
    expect(weightedScore(v, w)).toBeCloseTo(w.interest + w.question - w.recentlyReplied, 3);
    expect(weightedScore(vector({}, { budgetSpent: f(1) }), w)).toBe(0);
    expect(weightedScore(vector({ interest: f(1), question: f(1), continuity: f(1), obligation: f(1) }), w)).toBe(1);
  });

  it('deliberates at or above high, with the reason a person reads', () => {
    const v = vector({
      interest: f(1, 'about 猫'),
      question: f(1, 'a question'),
      obligation: f(1, 'nobody answered in 45 s'),
    });
    const s = scoreBatch(v, profile, first);
    expect(s.outcome).toBe('deliberate');
    expect(s.reason).toMatch(/^deliberate: 0\.\d\d ≥ 0\.67 \(about 猫, nobody answered in 45 s, a question\)$/);
    expect(s.features).toMatchObject({ interest: 1, question: 1, obligation: 1, high: profile.high });
  });

  it('snoozes between middle and high — once, or for as long as an open question may still be answered', () => {
    const v = vector({ interest: f(1, 'about 猫'), question: f(0.6, 'question words') });
    expect(scoreBatch(v, profile, first)).toMatchObject({ outcome: 'snooze' });
    expect(scoreBatch(v, profile, first).reason).toMatch(/^snoozed: 0\.42 ≤ 0\.\d\d < 0\.67 \(.*look again in 42 s\)$/);
    expect(scoreBatch(v, profile, { snoozes: 1, worthWaiting: false }).outcome).toBe('skip');
    expect(scoreBatch(v, profile, { snoozes: 1, worthWaiting: true }).outcome).toBe('snooze');
  });

  it('skips below middle, naming the penalties and the missing keyword', () => {
    const v = vector({ question: f(1, 'a question') }, { recentlyReplied: f(1, 'replied 40 s ago') });
    const s = scoreBatch(v, profile, first);
    expect(s.outcome).toBe('skip');
    expect(s.reason).toBe('skipped: 0.00 < 0.42 (replied 40 s ago, a question, no keyword)');
  });

  it('never engages on chatter, a spent budget, a called-only group, or with nothing to answer', () => {
    const strong = { interest: f(1, 'about 猫'), question: f(1), continuity: f(1), obligation: f(1) };
    expect(scoreBatch(vector(strong, {}, true), profile, first).reason).toBe(
      'skipped: chatter (“哈哈”) — never joined unasked',
    );
    const spent = scoreBatch(vector(strong, { budgetSpent: f(1, '3/3 replies this window') }), profile, first);
    expect(spent).toMatchObject({ outcome: 'skip', reason: 'skipped: reply budget spent (3/3 replies this window)' });
    expect(scoreBatch(vector(strong), { ...profile, onlyWhenCalled: true }, first).outcome).toBe('skip');
    const quiet = scoreBatch(
      vector({ silence: f(1, 'after 30 min of quiet'), novelty: f(1, 'new topic') }),
      profile,
      first,
    );
    expect(quiet.outcome).toBe('skip');
    expect(quiet.reason).toContain('nothing to answer');
  });

  it('the persona’s numbers move the thresholds: an eager persona joins in where a shy one waits', () => {
    const eager = attentionProfile({ ...persona, participationBias: 0.9, attention: {} }, null);
    const shy = attentionProfile({ ...persona, participationBias: 0.1, attention: {} }, null);
    const v = vector({ interest: f(1, 'about 猫'), question: f(1) });
    expect(scoreBatch(v, eager, first).outcome).toBe('deliberate');
    expect(scoreBatch(v, profile, first).outcome).toBe('snooze');
    expect(scoreBatch(v, shy, first).outcome).not.toBe('deliberate');
    expect(eager.budget).toBeGreaterThan(shy.budget);
    expect(eager.cooldownMs).toBeLessThan(shy.cooldownMs);
  });
});
