import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, sentMessageMember } from '@app/contracts';
import { Clock, REDIS } from '@app/platform';

/** Message ids kept per partition; the oldest go first (a quote of a month-old message is rare and harmless). */
export const SENT_IDS_PER_PARTITION = 200_000;

/**
 * Which message ids are the bot's own (docs/adr/0008): the sorted set outbound writes in the commit of every
 * `message.sent`, and ingress adds the implementation's `message_sent` reports to. Ingress reads it to tell a
 * quote of the bot (`direct: reply`), so the answer survives restarts of either app.
 */
@Injectable()
export class SentMessageIds {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly clock: Clock,
  ) {}

  async isBots(conversation: string, messageId: string): Promise<boolean> {
    const partition = this.keys.partitionOf(conversation);
    return (
      (await this.redis.zscore(this.keys.sentMessages(partition), sentMessageMember(conversation, messageId))) !== null
    );
  }

  async remember(conversation: string, messageId: string): Promise<void> {
    const key = this.keys.sentMessages(this.keys.partitionOf(conversation));
    await this.redis
      .multi()
      .zadd(key, this.clock.nowMs(), sentMessageMember(conversation, messageId))
      .zremrangebyrank(key, 0, -(SENT_IDS_PER_PARTITION + 1))
      .exec();
  }
}
