/**
 * One process's view of urgent work across all its lanes (every partition of every consumer group it reads).
 *
 * A process runs up to `concurrency` ordinary lanes per partition — hundreds of turns at once when its groups are
 * backlogged, all sharing one event loop and one pipelined Redis connection. A turn for a message addressed to the
 * bot then waits at each of its awaits behind the continuations of every other turn in flight, and its commands
 * queue behind theirs on the connection: under saturation that was seconds per turn. So while any lane of the
 * process holds urgent work that is ready or running, ordinary lanes everywhere in the process start only while
 * fewer than `whileUrgent` of them run. Lanes already running finish; none is stopped. When the last urgent lane
 * is done, every lane is woken to fill its slots again.
 */
export class UrgencyGate {
  private urgentLanes = 0;
  private ordinaryRunning = 0;
  private readonly sleepers = new Set<() => void>();

  /** `whileUrgent`: ordinary lanes the whole process may run while urgent work is ready or running. */
  constructor(readonly whileUrgent: number) {}

  /** No limit: every lane set keeps its own `concurrency` (tests, and consumers without a shared gate). */
  static open(): UrgencyGate {
    return new UrgencyGate(Number.POSITIVE_INFINITY);
  }

  /** Lanes holding urgent work that are ready or running, in the whole process. */
  get urgent(): number {
    return this.urgentLanes;
  }

  get ordinary(): number {
    return this.ordinaryRunning;
  }

  /** May an ordinary lane start now? */
  admitsOrdinary(): boolean {
    return this.urgentLanes === 0 || this.ordinaryRunning < this.whileUrgent;
  }

  /** `wake` is called whenever ordinary lanes held back may start again. */
  subscribe(wake: () => void): () => void {
    this.sleepers.add(wake);
    return () => this.sleepers.delete(wake);
  }

  urgentChanged(delta: 1 | -1): void {
    this.urgentLanes += delta;
    if (this.urgentLanes === 0) this.wake();
  }

  ordinaryStarted(): void {
    this.ordinaryRunning++;
  }

  ordinaryFinished(): void {
    this.ordinaryRunning--;
    // Only while urgent work holds ordinary lanes back does a freed ordinary slot matter to other lane sets.
    if (this.urgentLanes > 0 && this.ordinaryRunning < this.whileUrgent) this.wake();
  }

  private wake(): void {
    for (const wake of [...this.sleepers]) wake();
  }
}
