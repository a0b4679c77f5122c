import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Keyspace } from '@app/contracts';
import { isTransientError } from '@app/event-bus';
import { OutboxStore, type OutboxAddress } from './outbox.store.js';
import { ReplyDelivery } from './reply-delivery.js';
import { SendMetrics } from './send.metrics.js';
import { SendOrderGuard } from './send-order.guard.js';

/** How often every partition's outboxes are looked at (after a restart, a takeover, a lost kick). Real time. */
export const SCAN_EVERY_MS = 1000;
/** Wait between order checks while an earlier reply of the conversation is still pending in the stream. */
const ORDER_POLL_MS = 50;
/** Pause after an infrastructure error before the same reply is tried again (never skipped). */
const ERROR_PAUSE_MS = 1000;

/**
 * Sends each conversation's queued replies one after the other (strict order), different conversations in
 * parallel. One outbound process drains a conversation at a time (a lock renewed while it drains); a restarted or
 * another process finds unfinished outboxes by scanning, so order and delivery survive restarts. A reply that
 * cannot be sent right now (budget, cooldown, a retry, Redis down) holds back only its own conversation.
 */
@Injectable()
export class OutboxDrainer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('OutboxDrainer');
  private readonly active = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private scanner: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private stopping = false;

  constructor(
    private readonly store: OutboxStore,
    private readonly delivery: ReplyDelivery,
    private readonly order: SendOrderGuard,
    private readonly metrics: SendMetrics,
    private readonly keys: Keyspace,
  ) {}

  onApplicationBootstrap(): void {
    this.scanner = setInterval(() => {
      this.scanning ??= this.scan()
        .catch((error: unknown) => this.logger.warn(`outbox scan failed: ${(error as Error).message}`))
        .finally(() => (this.scanning = undefined));
    }, SCAN_EVERY_MS);
    this.scanner.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.scanner);
    // Everything is durable: a drain cut short resumes in the next process. Give the ones mid-call a moment.
    await Promise.race([Promise.allSettled([...this.active.values()]), sleep(2000)]);
  }

  /** Make sure the conversation's outbox is being drained (by this process, unless another holds it). */
  kick(address: OutboxAddress): void {
    if (this.stopping) return;
    const key = `${address.partition}|${address.conversation}`;
    if (this.active.has(key)) {
      this.again.add(key);
      return;
    }
    const run = this.drain(address)
      .catch((error: unknown) =>
        this.logger.error(`outbox drain of ${address.conversation} failed: ${(error as Error).stack ?? String(error)}`),
      )
      .finally(() => {
        this.active.delete(key);
        if (this.again.delete(key)) this.kick(address);
      });
    this.active.set(key, run);
  }

  private async scan(): Promise<void> {
    for (let partition = 0; partition < this.keys.partitions && !this.stopping; partition++) {
      for (const conversation of await this.store.conversations(partition)) this.kick({ partition, conversation });
    }
  }

  private async drain(address: OutboxAddress): Promise<void> {
    if (!(await this.store.lock(address))) return;
    let held = true;
    const renew = setInterval(
      () => {
        this.store.lock(address).then(
          (ok) => (held = ok),
          () => undefined,
        );
      },
      Math.max(100, Math.floor(this.store.lockMs / 3)),
    );
    try {
      while (!this.stopping && held) {
        const head = await this.attempt(() => this.store.head(address));
        if (head === 'error') continue;
        if (head === undefined) {
          await this.store.forgetIfEmpty(address);
          return;
        }
        if (await this.waitForEarlier(head.item)) continue;
        const done = await this.attempt(() => this.delivery.deliver(address, head.item));
        if (done === 'error') continue;
        await this.attempt(() => this.store.complete(address, head.item.event.payload.actionId, head.member));
      }
    } finally {
      clearInterval(renew);
      await this.store.unlock(address).catch(() => undefined);
    }
  }

  /** True while an earlier reply of this conversation is pending in the stream (then the head is read again). */
  private async waitForEarlier(item: Parameters<SendOrderGuard['earlierPending']>[0]): Promise<boolean> {
    let waited = false;
    const started = performance.now();
    while (!this.stopping && (await this.order.earlierPending(item).catch(() => true))) {
      if (!waited) this.metrics.waiting.inc({ reason: 'order' });
      waited = true;
      await sleep(ORDER_POLL_MS);
    }
    if (waited) {
      this.metrics.waiting.dec({ reason: 'order' });
      this.metrics.waits.observe({ reason: 'order' }, (performance.now() - started) / 1000);
    }
    return waited;
  }

  /** Run a step; an error (Redis down, a corrupt entry) pauses this conversation and the same step is tried again. */
  private async attempt<T>(step: () => Promise<T>): Promise<T | 'error'> {
    try {
      return await step();
    } catch (error) {
      const level = isTransientError(error) ? 'warn' : 'error';
      this.logger[level](`outbox step failed, retrying in place: ${(error as Error).message}`);
      await sleep(ERROR_PAUSE_MS);
      return 'error';
    }
  }
}
