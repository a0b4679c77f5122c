import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { ConsumerGroup, EventKind, Keyspace } from '@app/contracts';
import { REDIS } from '@app/platform';
import { conversationOf, type OutboxItem } from './outbox.store.js';

/** Pending entries looked at per check; more than this many earlier pending entries all count as "wait". */
const SCAN = 100;

/**
 * Per-conversation send order under failure (issue 5): the event bus retries a failing entry later while the
 * partition's next entries go ahead, so a reply's `action.send` could reach the outbox after a later one of the
 * same conversation. Before a reply is sent, this checks that no earlier `action.send` of the same conversation
 * is still pending (delivered to outbound, not yet acknowledged) in the same stream; if one is, the reply waits
 * for it.
 */
@Injectable()
export class SendOrderGuard {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  async earlierPending(item: OutboxItem): Promise<boolean> {
    const stream = this.keys.stream(item.sourcePartition);
    const pending = await this.pendingBefore(item, SCAN);
    if (pending.length === 0) return false;
    if (pending.length >= SCAN) return true;
    const conversation = conversationOf(item.event.payload.targetType, item.event.payload.targetId);
    // The entries are independent reads: one pipeline, not one round trip each.
    const entries = await Promise.all(
      pending.map(([id]) => this.redis.xrange(stream, id, id) as Promise<[string, string[]][]>),
    );
    for (const [entry] of entries) {
      const fields = entry?.[1];
      if (!fields || fields[1] !== EventKind.ActionSend) continue;
      try {
        const event = JSON.parse(fields[fields.indexOf('e') + 1] ?? 'null') as {
          payload?: { targetType?: 'group' | 'private'; targetId?: string };
        };
        const target = event.payload;
        if (
          target?.targetType &&
          target.targetId &&
          conversationOf(target.targetType, target.targetId) === conversation
        )
          return true;
      } catch {
        // An unreadable entry is the bus's to dead-letter; it is no reply of this conversation.
      }
    }
    return false;
  }

  /**
   * True when no entry before the reply's own is pending in its stream at all: then no earlier reply can ever
   * hold it back, because an entry before it was delivered before it (XREADGROUP delivers in id order) and can
   * only leave the pending list from now on, never join it. So a `true` here stays true, and `earlierPending`
   * need not be asked for this reply again. One XPENDING, cheap enough to ask while the reply is being queued.
   */
  async noneEarlier(item: OutboxItem): Promise<boolean> {
    return (await this.pendingBefore(item, 1)).length === 0;
  }

  private async pendingBefore(item: OutboxItem, count: number): Promise<[string, string, number, number][]> {
    return (await this.redis.xpending(
      this.keys.stream(item.sourcePartition),
      ConsumerGroup.Outbound,
      '-',
      `(${item.entryId}`,
      count,
    )) as [string, string, number, number][];
  }
}
