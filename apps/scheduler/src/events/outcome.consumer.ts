import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { EventKind, makeEvent, type ContextMessage, type EventEnvelope, type EventOf } from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { EventStates } from './event-states.repository.js';
import { RECENT_KEPT } from '../messages/message.consumer.js';
import { afterEpisode, afterSendProblem, afterSent, type OutcomeMove } from '../decisions/outcome.rules.js';

/**
 * Closes the loop on events in deliberation: when the episode or the send reports back, the subject event moves
 * to its final state (replied / skipped) with a reason. The bot's own sent lines join the group's recent window.
 */
@Controller()
export class OutcomeConsumer {
  constructor(private readonly states: EventStates) {}

  @EventPattern<string>(EventKind.MessageSent)
  async onSent(@Payload() event: EventOf<'message.sent'>, @Ctx() ctx: StreamContext): Promise<void> {
    const { payload } = event;
    if (event.groupId) {
      const line: ContextMessage = {
        eventId: event.id,
        messageId: payload.onebotMessageId,
        userId: 'self',
        displayName: 'self',
        text: payload.text,
        sentAt: Math.floor(Date.parse(event.createdAt) / 1000),
        fromSelf: true,
      };
      const recent = ctx.keys.groupRecent(ctx.partition, event.groupId);
      ctx.stage('LPUSH', [recent], JSON.stringify(line));
      ctx.stage('LTRIM', [recent], 0, RECENT_KEPT - 1);
    }
    await this.move(event, payload.triggerEventId, afterSent(), ctx);
  }

  @EventPattern<string>(EventKind.EpisodeCompleted)
  async onEpisode(@Payload() event: EventOf<'episode.completed'>, @Ctx() ctx: StreamContext): Promise<void> {
    const move = afterEpisode(event.payload);
    if (move) await this.move(event, event.payload.triggerEventId, move, ctx);
  }

  @EventPattern<string>(EventKind.SendFailed)
  async onFailed(@Payload() event: EventOf<'send.failed'>, @Ctx() ctx: StreamContext): Promise<void> {
    await this.move(event, event.payload.triggerEventId, afterSendProblem('send.failed', event.payload), ctx);
  }

  @EventPattern<string>(EventKind.SendUnknown)
  async onUnknown(@Payload() event: EventOf<'send.unknown'>, @Ctx() ctx: StreamContext): Promise<void> {
    await this.move(event, event.payload.triggerEventId, afterSendProblem('send.unknown', event.payload), ctx);
  }

  /** Only events still in flight move; a later segment's confirmation finds the event already final. */
  private async move(cause: EventEnvelope, subjectId: string, move: OutcomeMove, ctx: StreamContext): Promise<void> {
    const record = await this.states.load(ctx, subjectId);
    if (!record?.can(move.to)) return;
    record.transition(move.to, move.reason);
    this.states.stage(ctx, subjectId, record.state, record.seq);
    ctx.publish(
      makeEvent({
        kind: EventKind.EventTransitioned,
        groupId: cause.groupId,
        source: 'scheduler',
        cause,
        evidenceMessageIds: [subjectId],
        payload: { subjectEventId: subjectId, transitions: record.trail },
      }),
    );
  }
}
