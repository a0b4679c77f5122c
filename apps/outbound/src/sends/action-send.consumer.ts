import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { EventKind, Keyspace, type EventOf } from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { Clock } from '@app/platform';
import { OutboxDrainer } from './outbox.drainer.js';
import { OutboxStore } from './outbox.store.js';

/** Recalled triggers remembered per partition (a recall older than the newest 10,000 no longer matters). */
const RECALLS_KEPT = 10_000;

/**
 * Outbound's stream handlers: an `action.send` is queued in its conversation's outbox (durable, once per action)
 * and the conversation's drain is kicked; a `message.recalled` is remembered so that a reply to the recalled
 * message that has not gone out yet is dropped. Both are quick: the sending itself happens in the drain, so a
 * slow, paced or cooling-down group never holds the stream reader.
 */
@Controller()
export class ActionSendConsumer {
  constructor(
    private readonly outbox: OutboxStore,
    private readonly drainer: OutboxDrainer,
    private readonly keys: Keyspace,
    private readonly clock: Clock,
  ) {}

  // `<string>` picks the untyped overload: the typed one would force the context parameter to accept `unknown`.
  @EventPattern<string>(EventKind.ActionSend)
  async onActionSend(@Payload() event: EventOf<'action.send'>, @Ctx() ctx: StreamContext): Promise<void> {
    const item = { event, entryId: ctx.entryId, sourcePartition: ctx.partition };
    const address = this.outbox.addressOf(event);
    // The enqueue takes the conversation's lock when the reply is its only one; the first reads of that drain go
    // out in the same tick, so the reply's way to the API starts with one round trip instead of several.
    const queued = this.outbox.enqueue(item, this.drainer.accepting);
    const ahead = this.drainer.lookAhead(address, item);
    const { added, claimed, member } = await queued;
    this.drainer.kick(address, added && claimed ? { item, member, ...ahead } : undefined);
  }

  @EventPattern<string>(EventKind.MessageRecalled)
  onMessageRecalled(@Payload() event: EventOf<'message.recalled'>, @Ctx() ctx: StreamContext): void {
    const eventId = event.payload.eventId;
    if (eventId === undefined) return;
    const key = this.keys.recalledTriggers(ctx.partition);
    ctx.stage('ZADD', [key], this.clock.nowMs(), eventId);
    ctx.stage('ZREMRANGEBYRANK', [key], 0, -(RECALLS_KEPT + 1));
  }
}
