import { Controller, Inject } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import {
  EventKind,
  episodeIdFor,
  makeEvent,
  type ContextMessage,
  type EventEnvelope,
  type EventOf,
  type MessagePayload,
} from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { Clock, QunliConfig, REDIS } from '@app/platform';
import { EpisodeQueue } from '../episodes/episode.queue.js';
import { decideOnMessage } from '../decisions/message-decision.policy.js';
import { EventStates } from '../events/event-states.repository.js';

/** Messages kept per group for prompts (the ADR asks for the last 8–12). */
export const RECENT_KEPT = 20;
export const CONTEXT_SIZE = 12;

export function contextLine(event: EventEnvelope<MessagePayload>): ContextMessage {
  return {
    eventId: event.id,
    messageId: event.payload.messageId,
    userId: event.payload.sender.userId,
    displayName: event.payload.sender.displayName,
    text: event.payload.text,
    sentAt: event.payload.sentAt,
    fromSelf: false,
  };
}

/**
 * The scheduler's reaction to every message: decide (pure policy), record the decision with its reason, keep the
 * group's recent-message window, and dispatch an episode for messages that deserve one.
 */
@Controller()
export class MessageConsumer {
  constructor(
    private readonly episodes: EpisodeQueue,
    private readonly states: EventStates,
    private readonly config: QunliConfig,
    private readonly clock: Clock,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  @EventPattern<string>(EventKind.MessageDirect)
  onDirect(@Payload() event: EventOf<'message.direct'>, @Ctx() ctx: StreamContext): Promise<void> {
    return this.onMessage(event, ctx);
  }

  @EventPattern<string>(EventKind.MessageObserved)
  onObserved(@Payload() event: EventOf<'message.observed'>, @Ctx() ctx: StreamContext): Promise<void> {
    return this.onMessage(event, ctx);
  }

  private async onMessage(event: EventEnvelope<MessagePayload>, ctx: StreamContext): Promise<void> {
    const groupId = event.groupId ?? '';
    const recent = ctx.keys.groupRecent(ctx.partition, groupId);
    const decision = decideOnMessage(event.id, event.payload);
    let episodeId: string | undefined;

    if (decision.outcome === 'deliberate') {
      episodeId = episodeIdFor(event.id);
      const window = await this.redis.lrange(recent, 0, CONTEXT_SIZE - 1);
      const context = window.map((line) => JSON.parse(line) as ContextMessage).reverse();
      const deadline = new Date(this.clock.now().getTime() + this.config.QUNLI_EPISODE_TIMEOUT_MS);
      await this.episodes.dispatch(
        { episodeId, groupId: event.groupId, trigger: event, context, deadline: deadline.toISOString() },
        event.priority,
      );
      const last = decision.transitions[decision.transitions.length - 1]!;
      this.states.stage(ctx, event.id, last.to, last.seq);
    }

    ctx.stage('LPUSH', [recent], JSON.stringify(contextLine(event)));
    ctx.stage('LTRIM', [recent], 0, RECENT_KEPT - 1);
    ctx.publish(
      makeEvent({
        kind: EventKind.DecisionMade,
        groupId: event.groupId,
        source: 'scheduler',
        cause: event,
        actorIds: event.actorIds,
        evidenceMessageIds: [event.id],
        priority: event.priority,
        payload: {
          subjectEventId: event.id,
          outcome: decision.outcome,
          reason: decision.reason,
          features: decision.features,
          transitions: decision.transitions,
          ...(episodeId ? { episodeId } : {}),
        },
      }),
    );
  }
}
