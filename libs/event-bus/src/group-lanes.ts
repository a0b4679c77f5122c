/** What a lane task reports: handled for good (acknowledged or dead-lettered), or try the same item again later. */
export type LaneOutcome = { done: true } | { done: false; retryInMs: number };

export interface LaneItem {
  /** Unique per item (the stream entry id). */
  id: string;
  /** The lane: one chat group's events run one at a time, in push order. */
  key: string;
  /** Urgent items (a message addressed to the bot) jump ahead of other lanes and may use the reserved slots. */
  urgent: boolean;
}

export interface GroupLanesOptions<T extends LaneItem> {
  /** Lanes running at once (one slot per lane, whatever its backlog). */
  concurrency: number;
  /** Extra slots only lanes with an urgent head may take, so a direct message never waits for a free slot. */
  urgentReserve: number;
  run(item: T): Promise<LaneOutcome>;
  /** A task threw instead of reporting an outcome: the last net; the item is retried after `fallbackRetryMs`. */
  onError(error: unknown, item: T): void;
  fallbackRetryMs: number;
}

interface Lane<T> {
  key: string;
  queue: T[];
  running: boolean;
  /** Waiting out a backoff before its head is tried again. */
  retryTimer: NodeJS.Timeout | undefined;
}

/**
 * Per-group ordered work with no head-of-line blocking. Each lane (one chat group) runs one item at a time, in
 * push order; a failed item is retried in place (the lane waits, the others go on) until its task reports it done.
 * Slots are counted per running lane, not per queued item, so a flooding group holds one slot however long its
 * backlog, and the quiet groups of the partition keep theirs. Ready lanes whose head is urgent go first and may
 * use `urgentReserve` slots beyond `concurrency`.
 */
export class GroupLanes<T extends LaneItem> {
  private readonly lanes = new Map<string, Lane<T>>();
  private readonly readyUrgent: Lane<T>[] = [];
  private readonly readyNormal: Lane<T>[] = [];
  private readonly ready = new Set<Lane<T>>();
  private readonly ids = new Set<string>();
  private runningLanes = 0;
  private stopped = false;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly roomWaiters: (() => void)[] = [];

  constructor(private readonly options: GroupLanesOptions<T>) {}

  /** Items held (queued, running or backing off). */
  get size(): number {
    return this.ids.size;
  }

  get running(): number {
    return this.runningLanes;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Items queued in one lane (its backlog, the running item included). */
  backlog(key: string): number {
    return this.lanes.get(key)?.queue.length ?? 0;
  }

  /** Queue an item at the end of its lane. An item already held is ignored. */
  push(item: T): void {
    if (this.stopped || this.ids.has(item.id)) return;
    this.ids.add(item.id);
    let lane = this.lanes.get(item.key);
    if (!lane) {
      lane = { key: item.key, queue: [], running: false, retryTimer: undefined };
      this.lanes.set(item.key, lane);
    }
    lane.queue.push(item);
    if (lane.queue.length === 1 && !lane.running && !lane.retryTimer) this.markReady(lane);
    this.pump();
  }

  /** Resolves when fewer than `limit` items are held. */
  async belowSize(limit: number): Promise<void> {
    while (!this.stopped && this.ids.size >= limit) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
  }

  /** Stop starting items; resolves once running items finished. Queued and backing-off items are dropped. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const lane of this.lanes.values()) clearTimeout(lane.retryTimer);
    this.roomWaiters.splice(0).forEach((resolve) => resolve());
    if (this.runningLanes > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.lanes.clear();
    this.ready.clear();
    this.readyUrgent.length = 0;
    this.readyNormal.length = 0;
    this.ids.clear();
  }

  private markReady(lane: Lane<T>): void {
    if (this.ready.has(lane) || lane.queue.length === 0) return;
    this.ready.add(lane);
    (lane.queue[0]!.urgent ? this.readyUrgent : this.readyNormal).push(lane);
  }

  private next(): Lane<T> | undefined {
    const { concurrency, urgentReserve } = this.options;
    if (this.readyUrgent.length > 0 && this.runningLanes < concurrency + urgentReserve) return this.readyUrgent.shift();
    if (this.readyNormal.length > 0 && this.runningLanes < concurrency) return this.readyNormal.shift();
    return undefined;
  }

  private pump(): void {
    for (let lane = this.next(); lane && !this.stopped; lane = this.next()) {
      this.ready.delete(lane);
      this.start(lane);
    }
  }

  private start(lane: Lane<T>): void {
    const item = lane.queue[0]!;
    lane.running = true;
    this.runningLanes++;
    void this.options
      .run(item)
      .catch((error: unknown): LaneOutcome => {
        this.options.onError(error, item);
        return { done: false, retryInMs: this.options.fallbackRetryMs };
      })
      .then((outcome) => this.finished(lane, item, outcome));
  }

  private finished(lane: Lane<T>, item: T, outcome: LaneOutcome): void {
    lane.running = false;
    this.runningLanes--;
    if (this.stopped) {
      if (this.runningLanes === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
      return;
    }
    if (outcome.done) {
      lane.queue.shift();
      this.ids.delete(item.id);
      this.roomWaiters.shift()?.();
      if (lane.queue.length === 0) this.lanes.delete(lane.key);
      else this.markReady(lane);
    } else {
      lane.retryTimer = setTimeout(
        () => {
          lane.retryTimer = undefined;
          this.markReady(lane);
          this.pump();
        },
        Math.max(0, outcome.retryInMs),
      );
    }
    this.pump();
  }
}
