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
    const pending = (await this.redis.xpending(stream, ConsumerGroup.Outbound, '-', `(${item.entryId}`, SCAN)) as [
      string,
      string,
      number,
      number,
    ][];
    if (pending.length === 0) return false;
    if (pending.length >= SCAN) return true;
    const conversation = conversationOf(item.event.payload.targetType, item.event.payload.targetId);
    for (const [id] of pending) {
      const [entry] = (await this.redis.xrange(stream, id, id)) as [string, string[]][];
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
}
