import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { Clock, QunliConfig, REDIS } from '@app/platform';
import { SendMetrics, type WaitReason } from './send.metrics.js';
import { GIVE_TOKEN, globalBucket, groupBucket, TAKE_TOKEN, typingDelayMs, type Bucket } from './send-pacing.rules.js';
import type { OutboxAddress } from './outbox.store.js';

type PacerRedis = Redis & {
  qunliTakeToken(key: string, now: number, rate: number, capacity: number, ttlMs: number): Promise<number>;
  qunliGiveToken(key: string, capacity: number): Promise<number>;
};

/** What both buckets answered a take: 0 a token was taken, otherwise the product ms until one (none taken). */
export interface TokensAhead {
  group: number;
  global: number;
}

/** Longest single wait before the bucket is asked again (so a changed clock or config is noticed). */
const MAX_SLICE_MS = 5_000;

/**
 * Waits until a conversation may be sent the next message: its cooldown is over, its token bucket and the
 * deployment's have a token, and (optionally) the time to type the text has passed. Every wait is product time,
 * counted and timed in metrics; a send waits, it is never dropped.
 */
@Injectable()
export class SendPacer {
  private readonly redis: PacerRedis;
  private readonly group: Bucket;
  private readonly global: Bucket;

  constructor(
    @Inject(REDIS) redis: Redis,
    private readonly keys: Keyspace,
    private readonly clock: Clock,
    private readonly metrics: SendMetrics,
    private readonly config: QunliConfig,
  ) {
    this.redis = redis as PacerRedis;
    redis.defineCommand('qunliTakeToken', { numberOfKeys: 1, lua: TAKE_TOKEN });
    redis.defineCommand('qunliGiveToken', { numberOfKeys: 1, lua: GIVE_TOKEN });
    this.group = groupBucket(config.QUNLI_SEND_GROUP_PER_MINUTE, config.QUNLI_SEND_GROUP_BURST);
    this.global = globalBucket(config.QUNLI_SEND_GLOBAL_PER_SECOND);
  }

  /**
   * Ask the conversation's token bucket and the deployment's now, in one round trip that can carry the caller's
   * other commands of this tick. Hand the answer to `beforeSend`, or to `giveBack` when the send will not happen.
   */
  async takeAhead(address: OutboxAddress): Promise<TokensAhead> {
    const [group, global] = await Promise.all([
      this.take(this.groupKey(address), this.group),
      this.take(this.keys.sendRate, this.global),
    ]);
    return { group, global };
  }

  /** Return the tokens `takeAhead` took for a send that will not use them. */
  async giveBack(address: OutboxAddress, ahead: TokensAhead): Promise<void> {
    await Promise.all([
      ahead.group <= 0 ? this.redis.qunliGiveToken(this.groupKey(address), this.group.capacity) : undefined,
      ahead.global <= 0 ? this.redis.qunliGiveToken(this.keys.sendRate, this.global.capacity) : undefined,
    ]);
  }

  /**
   * Wait for everything that paces a send of `text` to `address`. `cooldownLeftMs`: what `cooldownLeft` just
   * returned, when the caller read it together with something else; otherwise it is read here. `ahead`: what
   * `takeAhead` answered, issued with those reads; otherwise both buckets are asked here (one round trip).
   */
  async beforeSend(address: OutboxAddress, text: string, cooldownLeftMs?: number, ahead?: TokensAhead): Promise<void> {
    const cooldown = cooldownLeftMs ?? (await this.cooldownLeft(address));
    if (cooldown > 0) {
      // Taken before the cooldown was known: the tokens go back for its length and are asked for after it.
      if (ahead) await this.giveBack(address, ahead);
      ahead = undefined;
      await this.waitCooldown(cooldown);
    }
    const { group, global } = ahead ?? (await this.takeAhead(address));
    // The conversation's bucket comes first: when it has no token, the deployment's token just taken goes back
    // (other conversations may send with it meanwhile) and is asked for again once the conversation has one.
    if (group > 0) {
      if (global <= 0) await this.redis.qunliGiveToken(this.keys.sendRate, this.global.capacity);
      await this.token(this.groupKey(address), this.group, 'group_budget', group);
      await this.token(this.keys.sendRate, this.global, 'global_rate');
    } else if (global > 0) {
      await this.token(this.keys.sendRate, this.global, 'global_rate', global);
    }
    const typing = typingDelayMs(text, this.config.QUNLI_SEND_TYPING_CHARS_PER_SECOND);
    if (typing > 0) await this.wait('typing', typing);
  }

  /** Pause the conversation's sends for `QUNLI_SEND_COOLDOWN_SECONDS` (after an unknown outcome). */
  async coolDown(address: OutboxAddress): Promise<void> {
    const seconds = this.config.QUNLI_SEND_COOLDOWN_SECONDS;
    if (seconds <= 0) return;
    await this.redis.set(
      this.keys.sendCooldown(address.partition, address.conversation),
      '1',
      'PX',
      this.clock.ttlMs(seconds * 1000),
    );
    this.metrics.cooldowns.inc();
    const now = this.clock.nowMs();
    this.metrics.cooldownSpells.start(address.conversation, now, now + seconds * 1000);
  }

  async cooldownOver(address: OutboxAddress): Promise<void> {
    await this.waitCooldown(await this.cooldownLeft(address));
  }

  /** Real milliseconds left of the conversation's cooldown (≤ 0: none). */
  async cooldownLeft(address: OutboxAddress): Promise<number> {
    return this.redis.pttl(this.keys.sendCooldown(address.partition, address.conversation));
  }

  private async waitCooldown(realMs: number): Promise<void> {
    if (realMs > 0) await this.wait('cooldown', this.clock.product(realMs));
  }

  private groupKey(address: OutboxAddress): string {
    return this.keys.sendBudget(address.partition, address.conversation);
  }

  /** Take a token of `bucket`: 0 when taken, otherwise the product ms until there is one (nothing taken). */
  private take(key: string, bucket: Bucket): Promise<number> {
    const ttl = this.clock.ttlMs(Math.ceil(bucket.capacity / bucket.ratePerMs) + 60_000);
    return this.redis.qunliTakeToken(key, this.clock.nowMs(), bucket.ratePerMs, bucket.capacity, ttl);
  }

  /** Wait until a token of `bucket` is taken; `waitMs`: what a `take` just answered (asked here when absent). */
  private async token(key: string, bucket: Bucket, reason: WaitReason, waitMs?: number): Promise<void> {
    for (let wait = waitMs ?? (await this.take(key, bucket)); wait > 0; wait = await this.take(key, bucket)) {
      await this.wait(reason, Math.min(wait, this.clock.product(MAX_SLICE_MS)));
    }
  }

  private async wait(reason: WaitReason, productMs: number): Promise<void> {
    const started = performance.now();
    this.metrics.waiting.inc({ reason });
    try {
      await this.clock.sleep(productMs);
    } finally {
      this.metrics.waiting.dec({ reason });
      this.metrics.waits.observe({ reason }, (performance.now() - started) / 1000);
    }
  }
}
