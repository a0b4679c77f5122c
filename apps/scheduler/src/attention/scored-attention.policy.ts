import type { AttentionProfile, PersonaPolicy } from '@app/persona';
import { attentionProfile } from '@app/persona';
import type { TalkSettings } from '../actors/group-actor.js';
import { repliesInWindow } from '../actors/group-actor.js';
import {
  directFeatures,
  forcedVerdict,
  type AttentionInput,
  type AttentionPolicy,
  type AttentionVerdict,
} from '../decisions/attention.policy.js';
import type { KeywordLookup } from '../keywords/keyword-lookup.js';
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
  type InterestIndex,
} from './features.js';
import { scoreBatch, type FeatureVector } from './scorer.js';
import { snippet } from './text.js';

/** The talk settings of an attention profile (the group actor's budget, window and cooldown). */
export function talkOf(profile: AttentionProfile): TalkSettings {
  return {
    talkValue: profile.talkValue,
    adjust: profile.talkAdjust,
    windowMs: profile.windowMs,
    budget: profile.budget,
    cooldownMs: profile.cooldownMs,
  };
}

interface GroupProfile {
  profile: AttentionProfile;
  talk: TalkSettings;
  interests: InterestIndex;
}

/**
 * Attention by score (issue 7): forced events deliberate; everything else is scored from its features, with the
 * persona's weights and thresholds for its group, and deliberated, snoozed or skipped with one line of why.
 * Pure given its inputs: the persona is fixed for the process, the lexicon is read through `KeywordLookup`.
 */
export class ScoredAttention implements AttentionPolicy {
  readonly considersAmbient = true;
  private readonly groups = new Map<string, GroupProfile>();

  constructor(
    private readonly persona: PersonaPolicy,
    private readonly keywords: KeywordLookup,
  ) {}

  keywordVersionFor(groupId: string | null, thread: string): string {
    return this.keywords.versionFor(this.keywordContext(groupId, thread));
  }

  private keywordContext(groupId: string | null, thread: string) {
    return { groupId, threadId: thread, personaId: this.persona.identity.name };
  }

  private group(groupId: string | null): GroupProfile {
    const key = groupId ?? '';
    let found = this.groups.get(key);
    if (!found) {
      // Private chats are `private:<user>`: they take the base persona.
      const id = groupId !== null && /^[0-9]+$/.test(groupId) ? groupId : null;
      const profile = attentionProfile(this.persona, id);
      found = { profile, talk: talkOf(profile), interests: interestIndex(profile.interests) };
      this.groups.set(key, found);
    }
    return found;
  }

  talk(groupId: string | null): TalkSettings {
    return this.group(groupId).talk;
  }

  judge(input: AttentionInput): AttentionVerdict {
    const { profile, talk, interests } = this.group(input.groupId);
    const text = input.fragments.map((f) => f.message.text).join('\n');
    const context = this.keywordContext(input.groupId, input.thread);
    const hits = this.keywords.match(text, context);
    const keywordHitsOut = hits.map((h) => ({ termId: h.termId, term: h.term, scope: h.scope, weight: h.weight }));
    const base = directFeatures(input);
    if (input.direct) {
      return { ...forcedVerdict(input.direct, base), threadId: input.thread, keywordHits: keywordHitsOut };
    }
    const thread = input.group.threads[input.thread];
    const actor = input.group.actor;
    const continuity = threadContinuity(thread, input.senderId, input.now);
    // An episode whose reply was delivered counts in `repliesInWindow` already.
    const ambientInFlight = Object.values(input.group.episodes).filter(
      (e) => e.lane === 'ambient' && e.status !== 'replied' && !e.delivered,
    ).length;
    const used = repliesInWindow(actor, input.now, talk) + ambientInFlight;
    const texts = input.fragments.map((f) => f.message.text);
    const vector: FeatureVector = {
      positive: {
        interest: personaInterest(text, interests),
        question: questionUrgency(input.fragments[input.fragments.length - 1]?.message.text ?? ''),
        continuity,
        obligation: socialObligation(thread, input.senderId, input.now, profile.obligationMs),
        keyword: keywordHits(hits),
        silence: silence(actor.lastGapMs),
        novelty: novelty(thread, input.fragments.length, text),
      },
      penalties: {
        recentlyReplied: recentlyReplied(actor, input.now, talk, continuity.value === 1),
        budgetSpent: budgetSpent(used, talk.budget, continuity.value === 1),
      },
      lowInformation: lowInformation(texts),
      chatter: snippet(texts[texts.length - 1] ?? '', 12),
    };
    const worthWaiting = (thread?.openQuestions ?? []).some((q) => q.senderId === input.senderId);
    const scored = scoreBatch(vector, profile, { snoozes: input.snoozes, worthWaiting });
    const verdict: AttentionVerdict = {
      outcome: scored.outcome,
      reason: scored.reason,
      features: { ...base, ...scored.features },
      threadId: input.thread,
      keywordHits: keywordHitsOut,
    };
    if (scored.outcome === 'snooze') {
      verdict.snoozeUntil = input.now + profile.snoozeMs;
      verdict.keywordVersion = this.keywords.versionFor(context);
    }
    return verdict;
  }
}
