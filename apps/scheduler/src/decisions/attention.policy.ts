import type { DecisionKeywordHit, DirectReason, MessagePayload } from '@app/contracts';
import type { TalkSettings } from '../actors/group-actor.js';
import type { GroupState } from './group-state.js';

/** One fragment of a batch as attention sees it. */
export interface AttentionFragment {
  eventId: string;
  message: MessagePayload;
}

export interface AttentionInput {
  groupId: string | null;
  thread: string;
  senderId: string;
  /** Oldest first; the newest is the trigger. */
  fragments: AttentionFragment[];
  /** Set when any fragment addressed the bot. */
  direct: DirectReason | undefined;
  /** How often this batch was snoozed already. */
  snoozes: number;
  group: Readonly<GroupState>;
  now: number;
}

export interface AttentionVerdict {
  outcome: 'deliberate' | 'skip' | 'snooze';
  /** One line a person can read, starting with the outcome: "skipped: attention 0.31 < 0.55; …". */
  reason: string;
  features: Record<string, number>;
  /** snooze: product time to look again. */
  snoozeUntil?: number;
  /** The thread the batch was judged in. */
  threadId?: string;
  /** Lexicon terms that hit the batch's text. */
  keywordHits?: DecisionKeywordHit[];
  /** The lexicon version it was judged with (a snoozed batch keeps it, to be looked at again when it moves on). */
  keywordVersion?: string;
}

/**
 * Where the attention score plugs in (issue 7): given a closed batch (one sender's fragments in one thread), say
 * whether it deserves an episode, should wait, or is recorded silently. `considersAmbient` false means ambient
 * messages are decided as they arrive (no debounce wait for a foregone skip); true debounces them like direct ones.
 */
export interface AttentionPolicy {
  readonly considersAmbient: boolean;
  judge(input: AttentionInput): AttentionVerdict;
  /** The group actor's talk settings in a group (budget window, cooldown); defaults when absent. */
  talk?(groupId: string | null): TalkSettings;
  /** The keyword lexicon version a batch of `thread` would be judged with now (compared with a snooze's). */
  keywordVersionFor?(groupId: string | null, thread: string): string;
}

const DIRECT_REASON_TEXT: Record<DirectReason, string> = {
  at: '@了机器人',
  reply: '引用了机器人的消息',
  name: '叫了机器人的名字',
  private: '私聊',
  poke: '戳了戳机器人',
};

/** Message features every policy reports (directness and its kind). */
export function directFeatures(input: AttentionInput): Record<string, number> {
  const direct = input.direct;
  return {
    directness: direct ? 1 : 0,
    at: direct === 'at' ? 1 : 0,
    reply: direct === 'reply' ? 1 : 0,
    name: direct === 'name' ? 1 : 0,
    private: direct === 'private' ? 1 : 0,
    poke: direct === 'poke' ? 1 : 0,
    fragments: input.fragments.length,
    textLength: input.fragments.reduce((n, f) => n + f.message.text.length, 0),
  };
}

/** The verdict on a batch addressed to the bot: always an episode. */
export function forcedVerdict(direct: DirectReason, features: Record<string, number>): AttentionVerdict {
  return { outcome: 'deliberate', reason: `deliberate: ${DIRECT_REASON_TEXT[direct]} (forced)`, features };
}

/**
 * A reply machine: what addresses the bot (@, quote, name, private, poke) is forced into an episode; everything
 * else is recorded and skipped with its reason. The scheduler runs `ScoredAttention` (`attention/`); this one
 * remains for tests of the decider's mechanics.
 */
export const forcedOnlyAttention: AttentionPolicy = {
  considersAmbient: false,
  judge(input) {
    const features = directFeatures(input);
    if (input.direct) return forcedVerdict(input.direct, features);
    return {
      outcome: 'skip',
      reason: 'skipped: not addressed to the bot; ambient attention is not enabled',
      features,
    };
  },
};
