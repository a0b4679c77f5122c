/**
 * When a process should give back the heap a burst made V8 commit (ADR 0035). Pure: the steward samples the
 * process once a second and asks `decide`; only a `compact` answer costs anything.
 *
 * V8 sizes its heap for the allocation rate it last saw and keeps that size while the process idles: a scheduler
 * that took 200,000 events in three minutes kept ≈ 670 MB resident with ≈ 90 MB live, for as long as it stayed
 * quiet. One full collection once the process has been quiet a while lets V8 shrink both generations (at a low
 * allocation rate it shrinks the young one too) and unmap the pages.
 */
export interface HeapSample {
  /** Real ms (a monotonic clock: the steward uses `performance.now()`). */
  readonly atMs: number;
  /** Share of the time since the previous sample the event loop spent busy (0–1). */
  readonly utilization: number;
  /** Bytes V8 has committed for the heap (`v8.getHeapStatistics().total_heap_size`). */
  readonly heapTotal: number;
}

export interface HeapCompactionPolicy {
  /** A sample below this utilisation is quiet. */
  readonly quietUtilization: number;
  /** How long (real ms) the process must have been quiet. */
  readonly quietForMs: number;
  /** How far (bytes) the committed heap must have grown above the lowest it was since the last compaction. */
  readonly growthBytes: number;
  /** The least time (real ms) between two compactions, whatever the samples say. */
  readonly minIntervalMs: number;
}

export interface HeapCompactionState {
  /** The lowest committed heap seen since the last compaction (or since the first sample). */
  readonly baseline: number | undefined;
  /** When the current quiet stretch began (the previous sample's time when the first quiet one came). */
  readonly quietSinceMs: number | undefined;
  readonly lastSampleMs: number | undefined;
  readonly lastCompactionMs: number | undefined;
}

export const INITIAL_HEAP_COMPACTION_STATE: HeapCompactionState = {
  baseline: undefined,
  quietSinceMs: undefined,
  lastSampleMs: undefined,
  lastCompactionMs: undefined,
};

/**
 * Defaults: under 10% busy (an idle scheduler is ≈ 3%), for the configured quiet time, after 64 MB of growth
 * (less is V8's ordinary breathing), at most once a minute (the collection of the scheduler's ≈ 90 MB live heap
 * after the bench's burst held the event loop 0.5–0.65 s; a process that keeps bursting and resting pays that at
 * most once a minute).
 */
export function heapCompactionPolicy(quietForMs: number): HeapCompactionPolicy {
  return { quietUtilization: 0.1, quietForMs, growthBytes: 64 * 1024 * 1024, minIntervalMs: 60_000 };
}

export interface HeapCompactionDecision {
  readonly compact: boolean;
  readonly state: HeapCompactionState;
}

export function decideHeapCompaction(
  state: HeapCompactionState,
  sample: HeapSample,
  policy: HeapCompactionPolicy,
): HeapCompactionDecision {
  const baseline = Math.min(state.baseline ?? sample.heapTotal, sample.heapTotal);
  const quiet = sample.utilization < policy.quietUtilization;
  const quietSinceMs = quiet ? (state.quietSinceMs ?? state.lastSampleMs ?? sample.atMs) : undefined;
  const next: HeapCompactionState = { ...state, baseline, quietSinceMs, lastSampleMs: sample.atMs };
  const grown = sample.heapTotal - baseline >= policy.growthBytes;
  const quietLongEnough = quietSinceMs !== undefined && sample.atMs - quietSinceMs >= policy.quietForMs;
  const rested = state.lastCompactionMs === undefined || sample.atMs - state.lastCompactionMs >= policy.minIntervalMs;
  return { compact: grown && quietLongEnough && rested, state: next };
}

/** The state after a compaction: growth is measured from the heap it left, and a new quiet stretch must begin. */
export function afterHeapCompaction(atMs: number, heapTotalAfter: number): HeapCompactionState {
  return { baseline: heapTotalAfter, quietSinceMs: undefined, lastSampleMs: atMs, lastCompactionMs: atMs };
}
