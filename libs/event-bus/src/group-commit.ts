export interface GroupCommitOptions<T> {
  /** Writes the items of several submissions in one go (one transaction); all of them or none. */
  write(items: T[]): Promise<void>;
  /** Least real time between the starts of two writes: submissions arriving meanwhile share the next one. */
  intervalMs: number;
  /** Writes in flight at most (each with its own submissions; one caller has at most one submission waiting). */
  concurrency: number;
  /** Items taken into one write at most (a single larger submission is still written whole). */
  maxItems: number;
}

interface Submission<T> {
  items: T[];
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Group commit for batch consumers: batches handed in by several callers (one per partition reader) are written
 * together, at most `concurrency` writes at a time and at most one started per `intervalMs`. A partition with a few
 * new entries no longer costs a write of its own: at low rates most of a projector's time went to `BEGIN`/`COMMIT`
 * round trips and per-statement overhead for batches of one or two entries, for each of sixteen partitions.
 *
 * When a shared write fails, each submission is written again on its own, so one poison batch fails only its own
 * caller (whose reader then retries it entry by entry) and the others go through.
 */
export class GroupCommit<T> {
  private waiting: Submission<T>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing = 0;
  private lastStart = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: GroupCommitOptions<T>) {}

  /** Resolves once `items` are written (with whatever else shared the write), rejects if they could not be. */
  submit(items: T[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ items, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.writing >= this.options.concurrency || this.timer || this.waiting.length === 0) return;
    const wait = Math.max(0, this.lastStart + this.options.intervalMs - performance.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
  }

  private async flush(): Promise<void> {
    this.writing++;
    this.lastStart = performance.now();
    const taken = this.take();
    // Another write may start after the interval, while this one runs.
    this.schedule();
    try {
      await this.writeTogether(taken);
    } finally {
      this.writing--;
      this.schedule();
    }
  }

  /** Whole submissions, oldest first, up to `maxItems` (at least one). */
  private take(): Submission<T>[] {
    let count = 0;
    let n = 0;
    while (n < this.waiting.length && (n === 0 || count + this.waiting[n]!.items.length <= this.options.maxItems)) {
      count += this.waiting[n]!.items.length;
      n++;
    }
    return this.waiting.splice(0, n);
  }

  private async writeTogether(taken: Submission<T>[]): Promise<void> {
    try {
      await this.options.write(taken.length === 1 ? taken[0]!.items : taken.flatMap((s) => s.items));
      for (const submission of taken) submission.resolve();
      return;
    } catch (error) {
      if (taken.length === 1) {
        taken[0]!.reject(error);
        return;
      }
    }
    for (const submission of taken) {
      try {
        await this.options.write(submission.items);
        submission.resolve();
      } catch (error) {
        submission.reject(error);
      }
    }
  }
}
