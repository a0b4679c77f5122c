import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { EventKind, type EventEnvelope, type EventOf, type MessagePayload } from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { chunkDue, threadFor, ThreadBufferStore, type ThreadLine } from '@app/memory';
import { Clock, QunliConfig } from '@app/platform';
import { MemoryQueues } from './memory-queues.js';

/** Thread buffers outlive an idle thread long enough to be summarised, then expire (product days, real TTL). */
const BUFFER_TTL_PRODUCT_MS = 7 * 86_400_000;

/**
 * Memory's consumer group on the event streams (ADR-0016): every message joins its thread's buffer in the same
 * commit as the ack; every N messages a summary chunk is queued, and each message pushes the thread's idle job
 * back. Event memory itself needs nothing here: the projector makes every message searchable.
 */
@Controller()
export class MessageMemoryConsumer {
  constructor(
    private readonly buffers: ThreadBufferStore,
    private readonly queues: MemoryQueues,
    private readonly config: QunliConfig,
    private readonly clock: Clock,
  ) {}

  @EventPattern<string>(EventKind.MessageObserved)
  onObserved(@Payload() event: EventOf<'message.observed'>, @Ctx() ctx: StreamContext): Promise<void> {
    const p = event.payload;
    // The bot's own messages echoed back by the implementation are remembered once, from `message.sent`.
    if (p.sender.userId === p.selfId) return Promise.resolve();
    return this.remember(event, ctx, p.sender.userId, p.sender.displayName, p.text, false);
  }

  @EventPattern<string>(EventKind.MessageDirect)
  onDirect(@Payload() event: EventOf<'message.direct'>, @Ctx() ctx: StreamContext): Promise<void> {
    const p = event.payload;
    if (p.sender.userId === p.selfId) return Promise.resolve();
    return this.remember(event, ctx, p.sender.userId, p.sender.displayName, p.text, false);
  }

  /** The bot's own words join the thread (the summary needs them), marked so they are never a source of facts. */
  @EventPattern<string>(EventKind.MessageSent)
  onSent(@Payload() event: EventOf<'message.sent'>, @Ctx() ctx: StreamContext): Promise<void> {
    const selfId = this.config.QUNLI_SELF_ID ?? 'self';
    return this.remember(event, ctx, selfId, this.config.nicknames[0] ?? '我', event.payload.text, true);
  }

  private async remember(
    event: EventEnvelope<MessagePayload> | EventOf<'message.sent'>,
    ctx: StreamContext,
    userId: string,
    displayName: string,
    text: string,
    fromSelf: boolean,
  ): Promise<void> {
    const groupId = event.groupId;
    if (groupId === null) return;
    const at = Date.parse(event.createdAt);
    const gapMs = this.config.QUNLI_MEMORY_THREAD_GAP_MINUTES * 60_000;
    const explicit = event.threadId !== undefined && event.threadId !== '';
    const current = explicit ? null : await this.buffers.groupThread(groupId);
    const threadId = threadFor(event.threadId, current, event.id, at, gapMs);
    const state = await this.buffers.state(groupId, threadId);
    const line: ThreadLine = {
      ordinal: state.ordinal + 1,
      eventId: event.id,
      userId,
      displayName,
      text,
      fromSelf,
      sentAt: at,
    };
    for (const write of this.buffers.recordMessage(
      groupId,
      threadId,
      line,
      explicit,
      this.clock.ttlMs(BUFFER_TTL_PRODUCT_MS),
    )) {
      ctx.stage(write.command, write.keys, ...write.args);
    }
    if (current && current.threadId !== threadId) {
      // A gap started a new thread: whatever the old one still holds is summarised now.
      const old = await this.buffers.state(groupId, current.threadId);
      if (old.ordinal > old.summarized) await this.queues.chunk(groupId, current.threadId, old.ordinal, 'idle');
    }
    if (chunkDue(line.ordinal, this.config.QUNLI_MEMORY_SUMMARY_EVERY)) {
      await this.queues.chunk(groupId, threadId, line.ordinal, 'every_n');
    }
    await this.queues.idle(groupId, threadId, line.ordinal);
  }
}
