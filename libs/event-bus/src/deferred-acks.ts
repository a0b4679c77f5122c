import type { Redis } from 'ioredis';

/** How long an acknowledgement of a skipped entry may wait to share a write with others. */
export const DEFER_ACKS_MS = 25;

/**
 * Acknowledgements of entries a consumer group skips (kinds it has no handler for), collected and sent together:
 * every `DEFER_ACKS_MS`, one XACK per stream, all in one tick (so one write on an auto-pipelining connection).
 * Most of the log is of no interest to most consumer groups, and at a low rate each read returns one entry: an
 * XACK of its own per entry cost a round trip each, for every group. An acknowledgement that a crash loses is
 * harmless: the entry is read again from the pending list and skipped again.
 */
export class DeferredAcks {
  private readonly waiting = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: Redis,
    private readonly group: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  add(stream: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    const set = this.waitingFor(stream);
    for (const id of ids) set.add(id);
    this.later(DEFER_ACKS_MS);
  }

  /** Whether an acknowledgement of this entry is still waiting (the janitor must not reclaim it meanwhile). */
  holds(stream: string, id: string): boolean {
    return this.waiting.get(stream)?.has(id) ?? false;
  }

  /** Send what waits now (for one stream, or all); waits for a flush already under way. */
  async flush(stream?: string): Promise<void> {
    if (stream === undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batches = [...this.waiting].filter(([key]) => stream === undefined || key === stream);
    for (const [key] of batches) this.waiting.delete(key);
    const sent = Promise.all(
      batches.map(async ([key, ids]) => {
        try {
          await this.redis.xack(key, this.group, ...ids);
        } catch (error) {
          // Kept for the next flush: a skipped entry left pending would only be read and skipped again.
          for (const id of ids) this.waitingFor(key).add(id);
          this.onError(error);
          this.later(DEFER_ACKS_MS * 4);
        }
      }),
    );
    const previous = this.flushing;
    this.flushing = sent.then(() => undefined);
    await Promise.all([previous, sent]);
  }

  private later(ms: number): void {
    if (this.timer) return;
    // Never what keeps a stopping process alive: what is left unsent is only read and skipped again.
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, ms).unref();
  }

  private waitingFor(stream: string): Set<string> {
    let set = this.waiting.get(stream);
    if (!set) this.waiting.set(stream, (set = new Set()));
    return set;
  }
}
