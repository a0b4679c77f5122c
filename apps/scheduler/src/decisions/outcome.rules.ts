import type { EpisodeCompletedPayload, EventState, SendProblemPayload } from '@app/contracts';

export interface OutcomeMove {
  to: EventState;
  reason: string;
}

/** Where an event in deliberation goes when its episode ends. `replied` waits for the send to be confirmed. */
export function afterEpisode(payload: EpisodeCompletedPayload): OutcomeMove | undefined {
  switch (payload.outcome) {
    case 'replied':
      return undefined;
    case 'no_reply':
      return { to: 'skipped', reason: 'skipped: the episode chose not to reply' };
    case 'cancelled':
      return { to: 'skipped', reason: `skipped: the episode was cancelled (${payload.error?.message ?? 'no reason'})` };
    case 'superseded':
      // The event's evidence went to the episode that took over; that one decides the event's fate.
      return undefined;
    case 'failed':
      return {
        to: 'skipped',
        reason: `skipped: episode failed (${payload.error?.code ?? 'UNKNOWN'}: ${payload.error?.message ?? ''})`.trim(),
      };
  }
}

export function afterSent(): OutcomeMove {
  return { to: 'replied', reason: 'replied: the reply was delivered' };
}

/** A send of unknown fate most likely went out (QQ risk control answers late), so it counts as replied. */
export function afterSendProblem(kind: 'send.failed' | 'send.unknown', payload: SendProblemPayload): OutcomeMove {
  return kind === 'send.failed'
    ? { to: 'skipped', reason: `skipped: the reply could not be delivered (${payload.error.code})` }
    : { to: 'replied', reason: `replied: delivery unconfirmed (${payload.error.code})` };
}
