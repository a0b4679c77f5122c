import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, QunliError, type EventOf } from '@app/contracts';
import { QunliConfig, REDIS } from '@app/platform';

/** One reply waiting in a conversation's outbox. */
export interface OutboxItem {
  event: EventOf<'action.send'>;
  /** The stream entry of the `action.send` (orders the outbox; `sourcePartition`'s stream). */
  entryId: string;
  sourcePartition: number;
}

/** Where an outbox lives: the partition of its conversation, and the conversation (group id or `private:<id>`). */
export interface OutboxAddress {
  partition: number;
  conversation: string;
}

/** What `enqueue` did: queued now (or already), and whether it took the conversation's lock with it. */
export interface Enqueued {
  added: boolean;
  claimed: boolean;
  /** The reply's member of the outbox (`<sortable entry id>|<action id>`). */
  member: string;
}

/** The conversation a send action goes to (the event `groupId` of what it produces). */
export function conversationOf(targetType: 'group' | 'private', targetId: string): string {
  return targetType === 'group' ? targetId : `private:${targetId}`;
}

/** A stream id as text that sorts like the id (`ms-seq`, zero-padded). */
export function sortableEntryId(entryId: string): string {
  const [ms = '0', seq = '0'] = entryId.split('-');
  return `${ms.padStart(15, '0')}-${seq.padStart(10, '0')}`;
}

// 0: already queued; 1: queued; 2: queued as the conversation's only reply, and its lock taken for ARGV[5] (when
// given, the same rule as LOCK), so the caller can send it at once without reading the outbox back.
const ENQUEUE = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('SADD', KEYS[3], ARGV[4])
if ARGV[5] ~= '' and redis.call('ZCARD', KEYS[2]) == 1 then
  local holder = redis.call('GET', KEYS[4])
  if holder == false or holder == ARGV[5] then
    redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[6])
    return 2
  end
end
return 1
`;

// Remove a sent reply; when it was the last, forget the conversation and release its lock (if still ours).
const COMPLETE = `
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[1], ARGV[1])
local left = redis.call('ZCARD', KEYS[2])
if left == 0 then
  redis.call('SREM', KEYS[3], ARGV[3])
  if redis.call('GET', KEYS[4]) == ARGV[4] then redis.call('DEL', KEYS[4]) end
end
return left
`;

const FORGET_IF_EMPTY = `
if redis.call('ZCARD', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) return 1 end
return 0
`;

// Take the lock, or take it back when this instance held it before a restart (same QUNLI_INSTANCE_ID).
const LOCK = `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`;

const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

type OutboxRedis = Redis & {
  qunliOutboxEnqueue(
    items: string,
    outbox: string,
    convs: string,
    lock: string,
    actionId: string,
    member: string,
    item: string,
    conv: string,
    owner: string,
    ms: number,
  ): Promise<number>;
  qunliOutboxComplete(
    items: string,
    outbox: string,
    convs: string,
    lock: string,
    actionId: string,
    member: string,
    conv: string,
    owner: string,
  ): Promise<number>;
  qunliOutboxForget(outbox: string, convs: string, conv: string): Promise<number>;
  qunliOutboxLock(lock: string, owner: string, ms: number): Promise<number>;
  qunliOutboxUnlock(lock: string, owner: string): Promise<number>;
};

/**
 * Outbound's durable outbox (docs/adr/0009): per conversation, the replies still to send, in the order their
 * `action.send` entries have in the stream, and one lock so that exactly one outbound process sends for a
 * conversation at a time. Everything of one conversation sits in its partition's slot.
 */
@Injectable()
export class OutboxStore {
  private readonly redis: OutboxRedis;
  private readonly owner: string;
  readonly lockMs: number;

  constructor(
    @Inject(REDIS) redis: Redis,
    private readonly keys: Keyspace,
    config: QunliConfig,
  ) {
    this.redis = redis as OutboxRedis;
    this.owner = config.QUNLI_INSTANCE_ID;
    this.lockMs = config.QUNLI_LEASE_MS;
    redis.defineCommand('qunliOutboxEnqueue', { numberOfKeys: 4, lua: ENQUEUE });
    redis.defineCommand('qunliOutboxComplete', { numberOfKeys: 4, lua: COMPLETE });
    redis.defineCommand('qunliOutboxForget', { numberOfKeys: 2, lua: FORGET_IF_EMPTY });
    redis.defineCommand('qunliOutboxLock', { numberOfKeys: 1, lua: LOCK });
    redis.defineCommand('qunliOutboxUnlock', { numberOfKeys: 1, lua: UNLOCK });
  }

  addressOf(event: EventOf<'action.send'>): OutboxAddress {
    const conversation = conversationOf(event.payload.targetType, event.payload.targetId);
    return { partition: this.keys.partitionOf(conversation), conversation };
  }

  /**
   * Queue a reply (idempotent per action id: a redelivered action is queued once). With `claim`, a reply that is
   * its conversation's only one also takes the conversation's lock in the same script (`claimed`): the caller
   * holds the outbox as `lock` would have given it, and knows its head without reading it back.
   */
  async enqueue(item: OutboxItem, claim = false): Promise<Enqueued> {
    const { partition, conversation } = this.addressOf(item.event);
    const member = `${sortableEntryId(item.entryId)}|${item.event.payload.actionId}`;
    const result = await this.redis.qunliOutboxEnqueue(
      this.keys.outboxItems(partition),
      this.keys.outbox(partition, conversation),
      this.keys.outboxConversations(partition),
      this.keys.outboxLock(partition, conversation),
      item.event.payload.actionId,
      member,
      JSON.stringify(item),
      conversation,
      claim ? this.owner : '',
      this.lockMs,
    );
    return { added: result >= 1, claimed: result === 2, member };
  }

  /** The oldest queued reply of a conversation. */
  async head(address: OutboxAddress): Promise<{ item: OutboxItem; member: string } | undefined> {
    const [member] = await this.redis.zrange(this.keys.outbox(address.partition, address.conversation), 0, 0);
    if (member === undefined) return undefined;
    const actionId = member.slice(member.indexOf('|') + 1);
    const raw = await this.redis.hget(this.keys.outboxItems(address.partition), actionId);
    if (raw === null) {
      // An index entry without its item (cannot happen through this store): drop it so the queue moves on.
      await this.redis.zrem(this.keys.outbox(address.partition, address.conversation), member);
      return this.head(address);
    }
    try {
      return { item: JSON.parse(raw) as OutboxItem, member };
    } catch {
      throw new QunliError('SEND.OUTBOX_CORRUPT', `outbox item ${actionId} is unreadable`, { actionId });
    }
  }

  /**
   * Remove a sent reply; returns how many are left. At 0 the conversation is forgotten and its lock released in
   * the same script (when this instance still held it): the drain is over.
   */
  async complete(address: OutboxAddress, actionId: string, member: string): Promise<number> {
    return this.redis.qunliOutboxComplete(
      this.keys.outboxItems(address.partition),
      this.keys.outbox(address.partition, address.conversation),
      this.keys.outboxConversations(address.partition),
      this.keys.outboxLock(address.partition, address.conversation),
      actionId,
      member,
      address.conversation,
      this.owner,
    );
  }

  /** Conversations of a partition that have queued replies. */
  async conversations(partition: number): Promise<string[]> {
    return this.redis.smembers(this.keys.outboxConversations(partition));
  }

  /**
   * Every partition's conversations with queued replies, read together (the commands go out in one pipeline, not
   * one round trip per partition).
   */
  async allConversations(): Promise<OutboxAddress[]> {
    const perPartition = await Promise.all(
      Array.from({ length: this.keys.partitions }, (_, partition) => this.conversations(partition)),
    );
    return perPartition.flatMap((conversations, partition) =>
      conversations.map((conversation) => ({ partition, conversation })),
    );
  }

  async forgetIfEmpty(address: OutboxAddress): Promise<void> {
    await this.redis.qunliOutboxForget(
      this.keys.outbox(address.partition, address.conversation),
      this.keys.outboxConversations(address.partition),
      address.conversation,
    );
  }

  async lock(address: OutboxAddress): Promise<boolean> {
    return (
      (await this.redis.qunliOutboxLock(
        this.keys.outboxLock(address.partition, address.conversation),
        this.owner,
        this.lockMs,
      )) === 1
    );
  }

  async unlock(address: OutboxAddress): Promise<void> {
    await this.redis.qunliOutboxUnlock(this.keys.outboxLock(address.partition, address.conversation), this.owner);
  }
}
