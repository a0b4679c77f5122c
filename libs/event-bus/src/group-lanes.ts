import { UrgencyGate } from './urgency-gate.js';

/** What a lane task reports: handled for good (acknowledged or dead-lettered), or try the same item again later. */
export type LaneOutcome = { done: true } | { done: false; retryInMs: number };

export interface LaneItem {
  /** Unique per item (the stream entry id). */
  id: string;
  /** The lane: one chat group's events run one at a time, in push order. */
  key: string;
  /**
   * Urgent items (a message addressed to the bot) make their lane jump ahead of other lanes and use the reserved
   * slots until they are done — the group's earlier items run at the same priority, in order, before them.
   */
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
  /** Shared by every lane set of the process: while urgent work waits anywhere, ordinary lanes are held back. */
  gate?: UrgencyGate;
}

interface Lane<T> {
  key: string;
  queue: T[];
  running: boolean;
  /** Waiting out a backoff before its head is tried again. */
  retryTimer: NodeJS.Timeout | undefined;
  /** Urgent items in `queue`: while there are any, the whole lane runs as urgent. */
  urgentItems: number;
  /** Which ready list holds the lane (entries in the other list are stale), or none. */
  queuedAs: 'urgent' | 'normal' | undefined;
  /** Counted by the gate as urgent work (urgent items, and ready or running). */
  countedUrgent: boolean;
  /** Took an ordinary slot when it started. */
  runningOrdinary: boolean;
}

/**
 * Per-group ordered work with no head-of-line blocking. Each lane (one chat group) runs one item at a time, in
 * push order; a failed item is retried in place (the lane waits, the others go on) until its task reports it done.
 * Slots are counted per running lane, not per queued item, so a flooding group holds one slot however long its
 * backlog, and the quiet groups of the partition keep theirs. A lane that holds an urgent item anywhere in its
 * queue is urgent (the items ahead of it inherit its priority, so an @ waits only for its own group's earlier
 * events): ready urgent lanes go first, may use `urgentReserve` slots beyond `concurrency`, and — through the
 * process's `UrgencyGate` — hold ordinary lanes back everywhere in the process until they are done.
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
  private readonly gate: UrgencyGate;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: GroupLanesOptions<T>) {
    this.gate = options.gate ?? UrgencyGate.open();
    this.unsubscribe = this.gate.subscribe(() => this.pump());
  }

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
      lane = {
        key: item.key,
        queue: [],
        running: false,
        retryTimer: undefined,
        urgentItems: 0,
        queuedAs: undefined,
        countedUrgent: false,
        runningOrdinary: false,
      };
      this.lanes.set(item.key, lane);
    }
    lane.queue.push(item);
    if (item.urgent) lane.urgentItems++;
    if (lane.queue.length === 1 && !lane.running && !lane.retryTimer) this.markReady(lane);
    // A lane waiting in the ordinary list moves up once it holds urgent work.
    else if (item.urgent && lane.queuedAs === 'normal') this.enqueue(lane);
    this.count(lane);
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
    this.unsubscribe();
    for (const lane of this.lanes.values()) {
      clearTimeout(lane.retryTimer);
      // Running lanes are counted off as they finish; the others leave the gate's count now.
      if (!lane.running && lane.countedUrgent) {
        lane.countedUrgent = false;
        this.gate.urgentChanged(-1);
      }
    }
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
    this.enqueue(lane);
  }

  private enqueue(lane: Lane<T>): void {
    lane.queuedAs = lane.urgentItems > 0 ? 'urgent' : 'normal';
    (lane.queuedAs === 'urgent' ? this.readyUrgent : this.readyNormal).push(lane);
  }

  /** Keep the gate's count of urgent work in step with this lane: urgent items, and ready or running. */
  private count(lane: Lane<T>): void {
    const urgent = lane.urgentItems > 0 && (lane.running || this.ready.has(lane)) && !this.stopped;
    if (urgent === lane.countedUrgent) return;
    lane.countedUrgent = urgent;
    this.gate.urgentChanged(urgent ? 1 : -1);
  }

  /** The first live entry of a ready list (a lane that moved up leaves a stale entry in the ordinary list). */
  private head(list: Lane<T>[], as: 'urgent' | 'normal'): Lane<T> | undefined {
    while (list.length > 0 && (list[0]!.queuedAs !== as || !this.ready.has(list[0]!))) list.shift();
    return list[0];
  }

  private next(): Lane<T> | undefined {
    const { concurrency, urgentReserve } = this.options;
    if (this.head(this.readyUrgent, 'urgent') && this.runningLanes < concurrency + urgentReserve) {
      return this.readyUrgent.shift();
    }
    if (this.head(this.readyNormal, 'normal') && this.runningLanes < concurrency && this.gate.admitsOrdinary()) {
      return this.readyNormal.shift();
    }
    return undefined;
  }

  private pump(): void {
    for (let lane = this.next(); lane && !this.stopped; lane = this.next()) {
      this.ready.delete(lane);
      lane.queuedAs = undefined;
      this.start(lane);
    }
  }

  private start(lane: Lane<T>): void {
    const item = lane.queue[0]!;
    lane.running = true;
    this.runningLanes++;
    lane.runningOrdinary = lane.urgentItems === 0;
    if (lane.runningOrdinary) this.gate.ordinaryStarted();
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
      this.count(lane);
      if (lane.runningOrdinary) this.gate.ordinaryFinished();
      if (this.runningLanes === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
      return;
    }
    if (outcome.done) {
      lane.queue.shift();
      if (item.urgent) lane.urgentItems--;
      this.ids.delete(item.id);
      this.roomWaiters.shift()?.();
      if (lane.queue.length === 0) this.lanes.delete(lane.key);
      else this.markReady(lane);
    } else {
      // A lane backing off is not urgent work in progress: it must not hold the process's ordinary lanes back.
      lane.retryTimer = setTimeout(
        () => {
          lane.retryTimer = undefined;
          if (this.stopped) return;
          this.markReady(lane);
          this.count(lane);
          this.pump();
        },
        Math.max(0, outcome.retryInMs),
      );
    }
    this.count(lane);
    if (lane.runningOrdinary) {
      lane.runningOrdinary = false;
      this.gate.ordinaryFinished();
    }
    this.pump();
  }
}
