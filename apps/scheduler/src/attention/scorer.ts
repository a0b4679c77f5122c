import type { AttentionProfile, AttentionWeightsProfile } from '@app/persona';
import type { Feature } from './features.js';

/*
 * The attention scorer (ADR-0018): a weighted sum of the features minus the penalties, clamped to 0–1, compared
 * with the persona's thresholds. Hard rules come first and win over any score: chatter never engages, a spent
 * budget never engages, a group set to "only when called" never engages, and a batch with nothing to answer
 * (no interest, question, thread, obligation or keyword) never engages — silence and novelty alone are not reasons.
 */

export type Positive = 'interest' | 'question' | 'continuity' | 'obligation' | 'keyword' | 'silence' | 'novelty';
export type Penalty = 'recentlyReplied' | 'budgetSpent';

export interface FeatureVector {
  positive: Record<Positive, Feature>;
  penalties: Record<Penalty, Feature>;
  lowInformation: boolean;
  /** What the low-information text was (for the reason). */
  chatter?: string;
}

export interface Score {
  outcome: 'deliberate' | 'snooze' | 'skip';
  score: number;
  reason: string;
  features: Record<string, number>;
}

const POSITIVES: readonly Positive[] = [
  'interest',
  'question',
  'continuity',
  'obligation',
  'keyword',
  'silence',
  'novelty',
];
const PENALTIES: readonly Penalty[] = ['recentlyReplied', 'budgetSpent'];
/** Features that are something to answer; the others only colour a score. */
const SUBSTANCE: readonly Positive[] = ['interest', 'question', 'continuity', 'obligation', 'keyword'];

const fmt = (x: number) => x.toFixed(2);

export function weightedScore(vector: FeatureVector, weights: AttentionWeightsProfile): number {
  let sum = 0;
  for (const name of POSITIVES) sum += weights[name] * vector.positive[name].value;
  for (const name of PENALTIES) sum -= weights[name] * vector.penalties[name].value;
  return Math.round(Math.min(1, Math.max(0, sum)) * 1000) / 1000;
}

/** The notes that explain a score, strongest contribution first. */
function notes(vector: FeatureVector, weights: AttentionWeightsProfile, withPenalties: boolean): string[] {
  const positives = POSITIVES.map((name) => ({ f: vector.positive[name], w: weights[name] }))
    .filter(({ f }) => f.value > 0 && f.note)
    .sort((a, b) => b.w * b.f.value - a.w * a.f.value)
    .map(({ f }) => f.note!);
  const penalties = withPenalties
    ? PENALTIES.map((name) => vector.penalties[name])
        .filter((f) => f.value > 0 && f.note)
        .map((f) => f.note!)
    : [];
  return [...penalties, ...positives];
}

export function flatFeatures(vector: FeatureVector, score: number, profile: AttentionProfile): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of POSITIVES) out[name] = vector.positive[name].value;
  for (const name of PENALTIES) out[name] = vector.penalties[name].value;
  out.lowInformation = vector.lowInformation ? 1 : 0;
  out.score = score;
  out.high = profile.high;
  out.middle = profile.middle;
  return out;
}

export interface ScoreOptions {
  /** How often this batch was snoozed already. */
  snoozes: number;
  /** Something could still change if it waits (an open question of the sender). */
  worthWaiting: boolean;
}

export function scoreBatch(vector: FeatureVector, profile: AttentionProfile, options: ScoreOptions): Score {
  const score = weightedScore(vector, profile.weights);
  const features = flatFeatures(vector, score, profile);
  const { high, middle } = profile;
  const why = (list: string[]) => (list.length > 0 ? ` (${list.join(', ')})` : '');

  if (profile.onlyWhenCalled) {
    return { outcome: 'skip', score, features, reason: 'skipped: in this group the bot speaks only when called' };
  }
  if (vector.lowInformation) {
    const said = vector.chatter ? `“${vector.chatter}”` : 'emoji';
    return { outcome: 'skip', score, features, reason: `skipped: chatter (${said}) — never joined unasked` };
  }
  if (vector.penalties.budgetSpent.value >= 1) {
    return {
      outcome: 'skip',
      score,
      features,
      reason: `skipped: reply budget spent (${vector.penalties.budgetSpent.note ?? 'no budget'})`,
    };
  }
  const substance = SUBSTANCE.some((name) => vector.positive[name].value > 0);
  if (!substance) {
    const list = notes(vector, profile.weights, true);
    return {
      outcome: 'skip',
      score,
      features,
      reason: `skipped: ${fmt(score)} < ${fmt(high)} — nothing to answer${why([...list, 'no question, interest or keyword'])}`,
    };
  }
  if (score >= high) {
    return {
      outcome: 'deliberate',
      score,
      features,
      reason: `deliberate: ${fmt(score)} ≥ ${fmt(high)}${why(notes(vector, profile.weights, false))}`,
    };
  }
  if (score >= middle && (options.snoozes === 0 || options.worthWaiting)) {
    const seconds = Math.round(profile.snoozeMs / 1000);
    return {
      outcome: 'snooze',
      score,
      features,
      reason: `snoozed: ${fmt(middle)} ≤ ${fmt(score)} < ${fmt(high)}${why([...notes(vector, profile.weights, true), `look again in ${seconds} s`])}`,
    };
  }
  const list = notes(vector, profile.weights, true);
  if (vector.positive.keyword.value === 0) list.push('no keyword');
  return {
    outcome: 'skip',
    score,
    features,
    reason: `skipped: ${fmt(score)} < ${fmt(score >= middle ? high : middle)}${why(list)}`,
  };
}
