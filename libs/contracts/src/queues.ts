import type { EventEnvelope } from './envelope.js';
import type { ContextMessage, MessagePayload } from './message.js';

/** Every BullMQ queue. Work, not facts: a job is something someone must do. */
export const QueueName = {
  /** Run one episode (cognition). Job id = episode id, so a duplicate dispatch is ignored. */
  Episodes: 'episodes',
  /** The life director's ticks (a BullMQ job scheduler). */
  LifeTicks: 'life-ticks',
} as const;
export type QueueName = (typeof QueueName)[keyof typeof QueueName];

export interface EpisodeJob {
  episodeId: string;
  groupId: string | null;
  trigger: EventEnvelope<MessagePayload>;
  /** The group's recent messages before the trigger, oldest first. */
  context: ContextMessage[];
  /** ISO time after which the episode must give up. */
  deadline: string;
}

/** Deterministic ids: the same trigger always yields the same episode, the same step the same action. */
export function episodeIdFor(triggerEventId: string): string {
  return `ep_${triggerEventId}`;
}

export function actionIdFor(episodeId: string, step: number): string {
  return `act_${episodeId}_${step}`;
}
