/**
 * The states an event passes through on its way to an outcome (ADR-0001 §5). The transition rules live in the
 * scheduler (`apps/scheduler/src/events/event-state-machine.ts`); contracts only name the states.
 */
export const EVENT_STATES = [
  'captured',
  'classified',
  'linked',
  'scheduled',
  'eligible',
  'deliberating',
  'replied',
  'skipped',
  'snoozed',
  'expired',
] as const;

export type EventState = (typeof EVENT_STATES)[number];

export const TERMINAL_EVENT_STATES: readonly EventState[] = ['replied', 'skipped', 'expired'];
