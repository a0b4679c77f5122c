import { setTimeout as delay } from 'node:timers/promises';

/**
 * Product time. Every timer, debounce, tick and cooldown goes through a Clock so `QUNLI_TIME_SCALE` can run
 * the whole bot faster in replays and tests. Infrastructure timeouts (Redis, HTTP) do not scale.
 */
export class Clock {
  constructor(readonly scale = 1) {}

  now(): Date {
    return new Date();
  }

  /** Real milliseconds that stand for `productMs` of product time. */
  real(productMs: number): number {
    return productMs / this.scale;
  }

  sleep(productMs: number, signal?: AbortSignal): Promise<void> {
    return delay(this.real(productMs), undefined, { signal });
  }
}
