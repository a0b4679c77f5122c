import { setTimeout as delay } from 'node:timers/promises';

/**
 * Product time: the one clock every timer, debounce, cooldown, TTL, decay, budget window and tick reads.
 *
 * With `QUNLI_TIME_SCALE` = s and `QUNLI_TIME_EPOCH` = e, product time runs s times faster than wall time from e:
 * `now = e + (wall − e) × s`. At scale 1 it is wall time. Every process of a deployment is given the same epoch,
 * so they agree on product time; a compressed replay (the economy bench) then behaves like the real one: a 30 s
 * debounce, a 5 min cooldown and the life line's day all pass s times faster, and events carry product times.
 *
 * Infrastructure waits (Redis and HTTP timeouts, reconnect backoff, lease renewals) are real time and do not go
 * through here. Where product time meets a real-time facility (setTimeout, a Redis `PX`/`EX`, a BullMQ delay),
 * convert with `real()` / `realUntil()` / `ttlSeconds()`.
 */
export class Clock {
  readonly epochMs: number;

  constructor(
    readonly scale = 1,
    epochMs = 0,
    private readonly wall: () => number = Date.now,
  ) {
    if (!(scale > 0) || !Number.isFinite(scale)) throw new RangeError(`time scale must be positive, got ${scale}`);
    this.epochMs = scale === 1 ? 0 : epochMs;
  }

  /** Product time now, in epoch milliseconds. */
  nowMs(): number {
    const wall = this.wall();
    return this.scale === 1 ? wall : this.epochMs + (wall - this.epochMs) * this.scale;
  }

  /** Product time now. */
  now(): Date {
    return new Date(this.nowMs());
  }

  /** Product time `productMs` from now. */
  after(productMs: number): Date {
    return new Date(this.nowMs() + productMs);
  }

  /** Product milliseconds since `since` (an ISO string, a Date or epoch ms of product time); negative if ahead. */
  since(since: string | Date | number): number {
    const at = typeof since === 'number' ? since : typeof since === 'string' ? Date.parse(since) : since.getTime();
    return this.nowMs() - at;
  }

  /** Real milliseconds that stand for `productMs` of product time. */
  real(productMs: number): number {
    return productMs / this.scale;
  }

  /** Product milliseconds that pass during `realMs` of wall time. */
  product(realMs: number): number {
    return realMs * this.scale;
  }

  /** Real milliseconds until the product instant `at` (0 when it has passed). */
  realUntil(at: string | Date | number): number {
    return Math.max(0, this.real(-this.since(at)));
  }

  /** Whole real seconds for a Redis `EX` standing for `productSeconds` (at least 1). */
  ttlSeconds(productSeconds: number): number {
    return Math.max(1, Math.ceil(productSeconds / this.scale));
  }

  /** Whole real milliseconds for a Redis `PX` or a BullMQ delay standing for `productMs` (at least 1). */
  ttlMs(productMs: number): number {
    return Math.max(1, Math.ceil(productMs / this.scale));
  }

  /** Wait `productMs` of product time. */
  sleep(productMs: number, signal?: AbortSignal): Promise<void> {
    return delay(this.real(productMs), undefined, { signal });
  }
}
