import type { DecisionKeywordHit, EpisodeOutcome } from '@app/contracts';
import type { FeedbackSignal } from './lexicon.rules.js';

/*
 * Keyword feedback, followed per group in log order: a decision whose keyword hits led to an episode
 * (`decision.made` deliberate) → the episode replied (`action.send` or `episode.completed` replied) → the same
 * person spoke again within the follow-up window: the hits were worth it (`engaged`). Replied with no follow-up:
 * `ignored`; no reply came of it: `unanswered`. Cancelled or superseded episodes say nothing about the terms.
 */

export interface PendingFeedback {
  hits: DecisionKeywordHit[];
  /** The person whose message the hits were in. */
  senderId: string;
  stage: 'deliberating' | 'replied';
  at: number;
  /** When `replied`: the end of the follow-up window (product ms). */
  until?: number;
}

export interface FeedbackState {
  /** Recent messages' senders (event id → user id), oldest first, capped. */
  senders: [string, string][];
  /** By subject event id. */
  pending: Record<string, PendingFeedback>;
}

export interface FeedbackSettings {
  /** How long after the reply a message from the same person counts as a follow-up. */
  followUpMs: number;
  /** A decision whose episode never reported back is forgotten after this long. */
  staleMs: number;
}

export const DEFAULT_FEEDBACK_SETTINGS: FeedbackSettings = { followUpMs: 10 * 60_000, staleMs: 60 * 60_000 };
const MAX_SENDERS = 200;

export interface FeedbackOutcome {
  hits: DecisionKeywordHit[];
  signal: FeedbackSignal;
}

export type FeedbackInput =
  | { type: 'message'; eventId: string; senderId: string }
  | { type: 'decision'; subjectEventId: string; outcome: string; hits: DecisionKeywordHit[] }
  | { type: 'replied'; triggerEventId: string }
  | { type: 'completed'; triggerEventId: string; outcome: EpisodeOutcome };

export function emptyFeedback(): FeedbackState {
  return { senders: [], pending: {} };
}

export function followFeedback(
  state: FeedbackState,
  input: FeedbackInput,
  now: number,
  settings: FeedbackSettings = DEFAULT_FEEDBACK_SETTINGS,
): { state: FeedbackState; outcomes: FeedbackOutcome[] } {
  const pending = { ...state.pending };
  let senders = state.senders;
  const outcomes: FeedbackOutcome[] = [];
  const settle = (id: string, signal: FeedbackSignal | null) => {
    const p = pending[id];
    delete pending[id];
    if (p && signal) outcomes.push({ hits: p.hits, signal });
  };

  for (const [id, p] of Object.entries(pending)) {
    if (p.stage === 'replied' && p.until !== undefined && now > p.until) settle(id, 'ignored');
    else if (p.stage === 'deliberating' && now - p.at > settings.staleMs) settle(id, null);
  }

  switch (input.type) {
    case 'message':
      for (const [id, p] of Object.entries(pending)) {
        if (p.stage === 'replied' && p.senderId === input.senderId && id !== input.eventId) settle(id, 'engaged');
      }
      senders = [...senders.filter(([id]) => id !== input.eventId), [input.eventId, input.senderId]];
      if (senders.length > MAX_SENDERS) senders = senders.slice(senders.length - MAX_SENDERS);
      break;
    case 'decision': {
      const sender = senders.find(([id]) => id === input.subjectEventId)?.[1];
      if (input.outcome === 'deliberate' && input.hits.length > 0 && sender && !pending[input.subjectEventId]) {
        pending[input.subjectEventId] = { hits: input.hits, senderId: sender, stage: 'deliberating', at: now };
      }
      break;
    }
    case 'replied': {
      const p = pending[input.triggerEventId];
      if (p?.stage === 'deliberating') {
        pending[input.triggerEventId] = { ...p, stage: 'replied', until: now + settings.followUpMs };
      }
      break;
    }
    case 'completed': {
      const p = pending[input.triggerEventId];
      if (!p) break;
      if (input.outcome === 'replied') {
        if (p.stage === 'deliberating') {
          pending[input.triggerEventId] = { ...p, stage: 'replied', until: now + settings.followUpMs };
        }
      } else if (input.outcome === 'no_reply' || input.outcome === 'failed') {
        settle(input.triggerEventId, p.stage === 'replied' ? null : 'unanswered');
      } else {
        settle(input.triggerEventId, null);
      }
      break;
    }
  }
  return { state: { senders, pending }, outcomes };
}
