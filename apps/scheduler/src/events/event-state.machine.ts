import type { EventState, StateTransition } from '@app/contracts';
import { QunliError, TERMINAL_EVENT_STATES } from '@app/contracts';

/** Allowed moves of the event state machine (ADR-0001 §5). Anything else needs `force()`. */
export const ALLOWED_TRANSITIONS: Readonly<Record<EventState, readonly EventState[]>> = {
  captured: ['classified', 'skipped'],
  classified: ['linked', 'skipped'],
  linked: ['scheduled', 'skipped'],
  scheduled: ['eligible', 'snoozed', 'skipped', 'expired'],
  snoozed: ['scheduled', 'eligible', 'skipped', 'expired'],
  eligible: ['deliberating', 'snoozed', 'skipped', 'expired'],
  deliberating: ['replied', 'snoozed', 'skipped', 'expired'],
  replied: [],
  skipped: [],
  expired: [],
};

export function isTerminal(state: EventState): boolean {
  return TERMINAL_EVENT_STATES.includes(state);
}

/**
 * One event's way through the states, with its audit trail. `transition()` follows the table and throws
 * `EVENT.ILLEGAL_TRANSITION` otherwise; `force()` is the explicit escape hatch (recovery, operator action) and is
 * marked as forced in the trail.
 */
export class EventRecord {
  readonly trail: StateTransition[] = [];

  constructor(
    readonly eventId: string,
    private current: EventState = 'captured',
    /** Transitions already recorded for this event before this record was loaded. */
    private recorded = 0,
  ) {}

  get state(): EventState {
    return this.current;
  }

  get seq(): number {
    return this.recorded + this.trail.length;
  }

  can(to: EventState): boolean {
    return ALLOWED_TRANSITIONS[this.current].includes(to);
  }

  transition(to: EventState, reason: string): this {
    if (!this.can(to)) {
      throw new QunliError(
        'EVENT.ILLEGAL_TRANSITION',
        `event ${this.eventId} cannot go from ${this.current} to ${to}`,
        {
          eventId: this.eventId,
          from: this.current,
          to,
        },
      );
    }
    return this.record(to, reason, false);
  }

  force(to: EventState, reason: string): this {
    return this.record(to, reason, true);
  }

  /** Walk the allowed path through `states` in order, all with the same reason. */
  through(states: EventState[], reason: string): this {
    for (const state of states) this.transition(state, reason);
    return this;
  }

  private record(to: EventState, reason: string, forced: boolean): this {
    this.trail.push({ seq: this.seq + 1, from: this.current, to, reason, forced });
    this.current = to;
    return this;
  }
}
