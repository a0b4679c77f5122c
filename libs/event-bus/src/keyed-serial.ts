/**
 * Runs tasks one at a time per key (one group's events in log order) and in parallel across keys. Knows how many
 * tasks are in flight so the reader can stop reading when it has enough work.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<void>>();
  private inFlight = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly slotWaiters: (() => void)[] = [];

  /** `onError` sees a task's failure; tasks are expected to handle their own errors, this is the last net. */
  constructor(private readonly onError: (error: unknown) => void) {}

  run(key: string, task: () => Promise<void>): void {
    this.inFlight++;
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next: Promise<void> = previous
      .then(task)
      .catch((error: unknown) => this.onError(error))
      .finally(() => {
        this.inFlight--;
        if (this.tails.get(key) === next) this.tails.delete(key);
        this.slotWaiters.shift()?.();
        if (this.inFlight === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
      });
    this.tails.set(key, next);
  }

  /** Resolves when fewer than `limit` tasks are in flight. */
  async belowLimit(limit: number): Promise<void> {
    while (this.inFlight >= limit) {
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
  }

  async idle(): Promise<void> {
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }
}
