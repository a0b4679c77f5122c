import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Keyspace } from '@app/contracts';
import { isTransientError } from '@app/event-bus';
import { OutboxStore, type OutboxAddress, type OutboxItem } from './outbox.store.js';
import { ReplyDelivery, type FirstLook } from './reply-delivery.js';
import { SendMetrics } from './send.metrics.js';
import { SendOrderGuard } from './send-order.guard.js';

/** How often every partition's outboxes are looked at (after a restart, a takeover, a lost kick). Real time. */
export const SCAN_EVERY_MS = 1000;
/** Wait between order checks while an earlier reply of the conversation is still pending in the stream. */
const ORDER_POLL_MS = 50;
/** Pause after an infrastructure error before the same reply is tried again (never skipped). */
const ERROR_PAUSE_MS = 1000;

/**
 * A reply queued as its conversation's only one, with the conversation's lock taken in the same script
 * (`OutboxStore.enqueue` with `claim`): the drain starts from it instead of taking the lock and reading the head.
 * The reads it starts with were issued with the enqueue.
 */
export interface ClaimedHead {
  item: OutboxItem;
  member: string;
  /** `SendOrderGuard.noneEarlier`, asked at enqueue (false on error: then the usual check runs). */
  noneEarlier: Promise<boolean>;
  /** `ReplyDelivery.lookAhead`, issued at enqueue. */
  firstLook: Promise<FirstLook | undefined>;
}

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

  /** Whether a kick now would start a drain (`enqueue` claims a conversation's lock only then). */
  get accepting(): boolean {
    return !this.stopping;
  }

  /**
   * The reads a drain of `item` starts with, issued now: call right after the enqueue, in the same tick, so they
   * share its round trip. Neither promise rejects.
   */
  lookAhead(address: OutboxAddress, item: OutboxItem): Pick<ClaimedHead, 'noneEarlier' | 'firstLook'> {
    return {
      noneEarlier: this.order.noneEarlier(item).catch(() => false),
      firstLook: this.delivery.lookAhead(address, item),
    };
  }

  /**
   * Make sure the conversation's outbox is being drained (by this process, unless another holds it). `claimed`:
   * the enqueue took the lock for this reply, its only one; a drain already running here goes on from the outbox.
   */
  kick(address: OutboxAddress, claimed?: ClaimedHead): void {
    if (this.stopping) {
      // Stopped between the claim and now: let the next process have the conversation at once.
      if (claimed) this.store.unlock(address).catch(() => undefined);
      return;
    }
    const key = `${address.partition}|${address.conversation}`;
    if (this.active.has(key)) {
      this.again.add(key);
      return;
    }
    const run = this.drain(address, claimed)
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
    for (const address of await this.store.allConversations()) this.kick(address);
  }

  private async drain(address: OutboxAddress, claimed?: ClaimedHead): Promise<void> {
    if (claimed === undefined && !(await this.store.lock(address))) return;
    let held = true;
    // Set while the completion that may release the lock is in flight: a renewal sent after it would take the
    // lock back for a drain that is over.
    let releasing = false;
    let released = false;
    const renew = setInterval(
      () => {
        if (releasing) return;
        this.store.lock(address).then(
          (ok) => (held = ok),
          () => undefined,
        );
      },
      Math.max(100, Math.floor(this.store.lockMs / 3)),
    );
    try {
      while (!this.stopping && held) {
        // The claimed reply is the head (the enqueue saw it alone); it is used for the first pass only.
        const start = claimed;
        claimed = undefined;
        const head = start
          ? { item: start.item, member: start.member }
          : await this.attempt(() => this.store.head(address));
        if (head === 'error') continue;
        if (head === undefined) {
          await this.store.forgetIfEmpty(address);
          return;
        }
        // No entry before it was pending at enqueue: none ever will be (SendOrderGuard.noneEarlier).
        if (!(start && (await start.noneEarlier)) && (await this.waitForEarlier(head.item))) continue;
        const first = start && (await start.firstLook);
        const done = await this.attempt(() => this.delivery.deliver(address, head.item, first));
        if (done === 'error') continue;
        releasing = true;
        const left = await this.attempt(() =>
          this.store.complete(address, head.item.event.payload.actionId, head.member),
        );
        releasing = false;
        if (left === 0) {
          released = true; // the outbox is empty and the completion released the lock
          return;
        }
        // The completion may have run and released the lock: hold it again before going on.
        if (left === 'error') held = await this.store.lock(address).catch(() => false);
      }
    } finally {
      clearInterval(renew);
      if (!released) await this.store.unlock(address).catch(() => undefined);
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
