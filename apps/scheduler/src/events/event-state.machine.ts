import type { EventState, StateTransition } from '@app/contracts';
import { QunliError, TERMINAL_EVENT_STATES } from '@app/contracts';

/**
 * Allowed moves of the event state machine (ADR-0001 §5):
 * captured → classified → linked → scheduled → eligible → deliberating → replied | skipped | snoozed | expired.
 * `scheduled` waits for time (notBefore, debounce), `eligible` for a dispatch slot, `deliberating` for its episode;
 * `snoozed` comes back to `scheduled` or `eligible`. Any live event may be skipped (recalled, superseded) or expire
 * (its deadline passed). Anything else needs `force()`.
 */
export const ALLOWED_TRANSITIONS: Readonly<Record<EventState, readonly EventState[]>> = {
  captured: ['classified', 'skipped', 'expired'],
  classified: ['linked', 'skipped', 'expired'],
  linked: ['scheduled', 'skipped', 'expired'],
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

/** Who moves events and when (product time), written into every transition of the audit trail. */
export interface TransitionAudit {
  by: string;
  at: Date;
}

/**
 * One event's way through the states, with its audit trail (who, when, why). `transition()` follows the table and
 * throws `EVENT.ILLEGAL_TRANSITION` otherwise; `force()` is the explicit escape hatch (recovery, operator action),
 * marked as forced in the trail. Nothing leaves a terminal state, not even by force (`EVENT.TERMINAL`).
 */
export class EventRecord {
  readonly trail: StateTransition[] = [];

  constructor(
    readonly eventId: string,
    private current: EventState = 'captured',
    /** Transitions already recorded for this event before this record was loaded. */
    private recorded = 0,
    private readonly audit?: TransitionAudit,
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
    if (isTerminal(this.current)) {
      throw new QunliError('EVENT.TERMINAL', `event ${this.eventId} is ${this.current} and cannot move again`, {
        eventId: this.eventId,
        from: this.current,
        to,
      });
    }
    return this.record(to, reason, true);
  }

  /** Walk the allowed path through `states` in order, all with the same reason. */
  through(states: EventState[], reason: string): this {
    for (const state of states) this.transition(state, reason);
    return this;
  }

  /** Move to `to` along the shortest allowed path (`eligible` → `replied` passes `deliberating`). */
  reach(to: EventState, reason: string): this {
    const path = pathTo(this.current, to);
    if (!path) return this.transition(to, reason);
    return this.through(path, reason);
  }

  private record(to: EventState, reason: string, forced: boolean): this {
    const transition: StateTransition = { seq: this.seq + 1, from: this.current, to, reason, forced };
    if (this.audit) {
      transition.by = this.audit.by;
      transition.at = this.audit.at.toISOString();
    }
    this.trail.push(transition);
    this.current = to;
    return this;
  }
}

const paths = new Map<string, EventState[] | undefined>();

/** The shortest sequence of allowed moves from `from` to `to` (excluding `from`), or undefined. */
export function pathTo(from: EventState, to: EventState): EventState[] | undefined {
  const key = `${from}>${to}`;
  if (!paths.has(key)) paths.set(key, shortestPath(from, to));
  const path = paths.get(key);
  return path ? [...path] : undefined;
}

function shortestPath(from: EventState, to: EventState): EventState[] | undefined {
  if (from === to) return [];
  const previous = new Map<EventState, EventState>();
  const queue: EventState[] = [from];
  while (queue.length > 0) {
    const state = queue.shift()!;
    for (const next of ALLOWED_TRANSITIONS[state]) {
      if (next === from || previous.has(next)) continue;
      previous.set(next, state);
      if (next === to) {
        const path: EventState[] = [to];
        for (let at = state; at !== from; at = previous.get(at)!) path.unshift(at);
        return path;
      }
      queue.push(next);
    }
  }
  return undefined;
}
