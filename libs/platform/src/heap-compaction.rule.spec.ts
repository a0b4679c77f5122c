import {
  afterHeapCompaction,
  decideHeapCompaction,
  heapCompactionPolicy,
  INITIAL_HEAP_COMPACTION_STATE,
  type HeapCompactionState,
} from './heap-compaction.rule.js';

const MB = 1024 * 1024;
const policy = heapCompactionPolicy(5000);

/** Feeds one sample a second from `startMs`; returns the seconds at which a compaction was asked for. */
function run(
  samples: readonly { busy: number; heapMb: number }[],
  state: HeapCompactionState = INITIAL_HEAP_COMPACTION_STATE,
  afterMb = 40,
): number[] {
  const compactedAt: number[] = [];
  samples.forEach((s, second) => {
    const atMs = second * 1000;
    const decision = decideHeapCompaction(state, { atMs, utilization: s.busy, heapTotal: s.heapMb * MB }, policy);
    state = decision.state;
    if (decision.compact) {
      compactedAt.push(second);
      state = afterHeapCompaction(atMs, afterMb * MB);
    }
  });
  return compactedAt;
}

const repeat = (n: number, busy: number, heapMb: number) => Array.from({ length: n }, () => ({ busy, heapMb }));

describe('decideHeapCompaction', () => {
  it('compacts once, after the configured quiet time that follows a burst', () => {
    // Idle at 40 MB, a 20 s burst that grows the heap to 600 MB, then rest.
    const compactedAt = run([...repeat(5, 0.03, 40), ...repeat(20, 0.9, 600), ...repeat(30, 0.03, 600)]);
    // The quiet stretch starts at the last busy sample (second 24); five seconds later is second 29.
    expect(compactedAt).toEqual([29]);
  });

  it('never compacts while the process is busy, however large the heap', () => {
    expect(run([...repeat(5, 0.03, 40), ...repeat(120, 0.5, 900)])).toEqual([]);
  });

  it('does not compact a quiet process whose heap did not grow enough', () => {
    // 40 → 100 MB is V8 breathing, not a burst (less than 64 MB above the lowest).
    expect(run([...repeat(5, 0.03, 40), ...repeat(10, 0.9, 100), ...repeat(30, 0.03, 100)])).toEqual([]);
  });

  it('measures growth from the lowest heap seen, so a heap V8 shrank itself is not compacted again', () => {
    // Starts large (boot), shrinks on its own to 50 MB, grows back to 100: 50 MB of growth, not enough.
    expect(run([...repeat(3, 0.03, 300), ...repeat(3, 0.03, 50), ...repeat(30, 0.03, 100)])).toEqual([]);
  });

  it('a short lull inside a burst is not quiet enough', () => {
    const lulls = Array.from({ length: 12 }, () => [...repeat(3, 0.8, 500), ...repeat(4, 0.02, 500)]).flat();
    expect(run([...repeat(2, 0.03, 40), ...lulls])).toEqual([]);
  });

  it('after a compaction, waits for new growth and a new quiet stretch, and rests a minute between two', () => {
    const compactedAt = run([
      ...repeat(3, 0.03, 40),
      ...repeat(10, 0.9, 500),
      ...repeat(20, 0.03, 500), // quiet since second 12: compacts at 17, heap 40 MB after
      ...repeat(20, 0.03, 40), // quiet, no growth: nothing
      ...repeat(10, 0.9, 500),
      ...repeat(40, 0.03, 500), // quiet again since second 62, enough at 67, but the minute since 17 ends at 77
    ]);
    expect(compactedAt).toEqual([17, 77]);
  });

  it('starts no quiet stretch before the first sample', () => {
    const first = decideHeapCompaction(
      INITIAL_HEAP_COMPACTION_STATE,
      { atMs: 0, utilization: 0, heapTotal: 10 * MB },
      policy,
    );
    expect(first.compact).toBe(false);
    expect(first.state).toEqual({ baseline: 10 * MB, quietSinceMs: 0, lastSampleMs: 0, lastCompactionMs: undefined });
  });
});
