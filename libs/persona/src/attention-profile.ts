import { effectivePersona } from './effective-persona.js';
import type { EffectivePersona, PersonaPolicy } from './persona-policy.js';

/*
 * The persona's numbers as attention reads them (ADR-0018). Each weight is a feature's most it can add to the
 * 0–1 attention score; penalties subtract. The mapping, with the default persona (participationBias 0.45,
 * curiosity 0.7, sociability 0.65, patience 0.6) in brackets:
 *
 *   interest    = 0.30 × (0.5 + curiosity)          [0.36]  a message about what the persona cares about
 *   keyword     = 0.30 × (0.5 + curiosity)          [0.36]  lexicon hits (weight × confidence)
 *   novelty     = 0.10 × curiosity                  [0.07]  a new topic
 *   continuity  = 0.50 × (0.5 + sociability)        [0.58]  a thread the bot is part of; its partner going on
 *   obligation  = 0.30 × (0.5 + sociability)        [0.35]  an open question nobody answered for `obligation`
 *   question    = 0.20                                       a question or an urgent ask
 *   silence     = 0.05                                       breaking a long quiet (never enough alone)
 *   recentlyReplied penalty = 0.25 × (1.5 − participationBias)  [0.26]  cooldown and talk frequency not met
 *   budgetSpent penalty     = 0.60                               the window's replies used up
 *   high   = 0.85 − 0.40 × participationBias        [0.67]  deliberate at or above
 *   middle = high − 0.25                            [0.42]  snooze (look again) at or above
 *   snooze = 15 s + 45 s × patience                 [42 s]  how long a middle message waits; also the time an
 *                                                            open question must go unanswered to oblige fully
 *   talkValue = participationBias, adjust 1 → ceil(1 / (talkValue × adjust)) messages between unasked replies
 *   budget = max(1, round(1 + 4 × participationBias)) replies per 30 min [3]
 *   cooldown = 20 s + 100 s × (1 − participationBias)  [75 s]
 *
 * The persona's `attention:` block (and a group's `groupOverrides.<id>.attention`) sets any of these outright.
 */

export interface AttentionWeightsProfile {
  interest: number;
  question: number;
  continuity: number;
  obligation: number;
  keyword: number;
  silence: number;
  novelty: number;
  recentlyReplied: number;
  budgetSpent: number;
}

export interface AttentionProfile {
  weights: AttentionWeightsProfile;
  high: number;
  middle: number;
  snoozeMs: number;
  /** An open question unanswered this long obliges the bot fully. */
  obligationMs: number;
  talkValue: number;
  talkAdjust: number;
  budget: number;
  windowMs: number;
  cooldownMs: number;
  onlyWhenCalled: boolean;
  interests: readonly string[];
}

const round = (x: number) => Math.round(x * 1000) / 1000;
const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

/** The attention profile of one persona as one group sees it (`null`: private chats). */
export function attentionProfile(policy: PersonaPolicy, groupId: string | null): AttentionProfile {
  return profileOf(effectivePersona(policy, groupId));
}

export function profileOf(persona: EffectivePersona): AttentionProfile {
  const { participationBias: bias, curiosity, sociability, patience } = persona;
  const explicit = persona.attention ?? {};
  const w = explicit.weights ?? {};
  const high = explicit.high ?? round(clamp(0.85 - 0.4 * bias, 0.3, 0.95));
  const middle = explicit.middle ?? round(Math.max(0, high - 0.25));
  const snoozeMs = (explicit.snoozeSeconds ?? Math.round(15 + 45 * patience)) * 1000;
  return {
    weights: {
      interest: w.interest ?? round(0.3 * (0.5 + curiosity)),
      keyword: w.keyword ?? round(0.3 * (0.5 + curiosity)),
      novelty: w.novelty ?? round(0.1 * curiosity),
      continuity: w.continuity ?? round(0.5 * (0.5 + sociability)),
      obligation: w.obligation ?? round(0.3 * (0.5 + sociability)),
      question: w.question ?? 0.2,
      silence: w.silence ?? 0.05,
      recentlyReplied: w.recentlyReplied ?? round(0.25 * (1.5 - bias)),
      budgetSpent: w.budgetSpent ?? 0.6,
    },
    high,
    middle: Math.min(middle, high),
    snoozeMs,
    obligationMs: snoozeMs,
    talkValue: explicit.talkValue ?? bias,
    talkAdjust: explicit.talkAdjust ?? 1,
    budget: explicit.budget ?? Math.max(1, Math.round(1 + 4 * bias)),
    windowMs: (explicit.windowMinutes ?? 30) * 60_000,
    cooldownMs: (explicit.cooldownSeconds ?? Math.round(20 + 100 * (1 - bias))) * 1000,
    onlyWhenCalled: explicit.onlyWhenCalled ?? false,
    interests: persona.interests,
  };
}
