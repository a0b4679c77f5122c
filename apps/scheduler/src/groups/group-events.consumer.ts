import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { EventKind, type EventEnvelope } from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { GroupRuntime } from './group-runtime.service.js';

/**
 * Every event the scheduler reacts to, in the group's log order (the bus runs one group's events one at a time):
 * messages, recalls, durable timers coming due, what episodes and sends report back. Each goes through the
 * group's decider (`GroupRuntime`).
 */
@Controller()
export class GroupEventsConsumer {
  constructor(private readonly runtime: GroupRuntime) {}

  @EventPattern<string>(EventKind.MessageDirect)
  onDirect(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.MessageObserved)
  onObserved(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.MessageRecalled)
  onRecalled(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.TimerFired)
  onTimer(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.EpisodeControl)
  onControl(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.ActionSend)
  onAction(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.EpisodeCompleted)
  onCompleted(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.EpisodeWaiting)
  onWaiting(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.ToolResult)
  onToolResult(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.MessageSent)
  onSent(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.SendFailed)
  onSendFailed(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.SendUnknown)
  onSendUnknown(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  @EventPattern<string>(EventKind.SendDropped)
  onSendDropped(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    return this.runtime.handle(event, ctx);
  }

  /**
   * A group's or a thread's keyword set moved on: the group's snoozed batches judged with an older version are judged
   * again (ADR 0020). A set of no group (global, persona, activity, game) has its versions in the global partition;
   * it wakes nobody early, and snoozed batches wait for their own timers.
   */
  @EventPattern<string>(EventKind.KeywordLexiconVersioned)
  async onLexiconVersioned(@Payload() event: EventEnvelope, @Ctx() ctx: StreamContext): Promise<void> {
    if (event.groupId === null) return;
    await this.runtime.handle(event, ctx);
  }
}
