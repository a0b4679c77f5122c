import { GroupLanes, type LaneItem, type LaneOutcome } from './group-lanes.js';
import { UrgencyGate } from './urgency-gate.js';

interface Item extends LaneItem {
  text: string;
}

function item(key: string, text: string, urgent = false): Item {
  return { id: `${key}:${text}`, key, text, urgent };
}

/** A deferred the test resolves by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Items that run until the test opens their gate (`open(id)`), and the order they started in. */
function heldRuns(): {
  started: string[];
  open: (id: string) => void;
  run: (i: Item) => Promise<LaneOutcome>;
} {
  const started: string[] = [];
  const gates = new Map<string, ReturnType<typeof gate>>();
  return {
    started,
    open: (id) => gates.get(id)!.open(),
    run: async (i) => {
      started.push(i.id);
      const g = gate();
      gates.set(i.id, g);
      await g.promise;
      return { done: true };
    },
  };
}

/** Options no test here looks at: retries come at once, errors are dropped. */
const quiet = { fallbackRetryMs: 1, onError: () => undefined };

describe('group lanes', () => {
  it('runs one group in push order and different groups in parallel', async () => {
    const { started, open, run } = heldRuns();
    const lanes = new GroupLanes<Item>({ ...quiet, concurrency: 4, urgentReserve: 0, run });
    lanes.push(item('a', '1'));
    lanes.push(item('a', '2'));
    lanes.push(item('b', '1'));
    await flush();
    expect(started).toEqual(['a:1', 'b:1']);
    open('a:1');
    await flush();
    expect(started).toEqual(['a:1', 'b:1', 'a:2']);
    open('a:2');
    open('b:1');
    await flush();
    expect(lanes.size).toBe(0);
  });

  it('gives a flooding group one slot, so quiet groups keep running', async () => {
    const done: string[] = [];
    const flood = gate();
    const lanes = new GroupLanes<Item>({
      concurrency: 2,
      urgentReserve: 0,
      fallbackRetryMs: 1,
      onError: () => undefined,
      run: async (i) => {
        if (i.key === 'flood') await flood.promise;
        done.push(i.id);
        return { done: true };
      },
    });
    for (let n = 0; n < 500; n++) lanes.push(item('flood', String(n)));
    lanes.push(item('quiet-1', 'x'));
    lanes.push(item('quiet-2', 'y'));
    await flush();
    await flush();
    expect(done).toEqual(['quiet-1:x', 'quiet-2:y']);
    expect(lanes.running).toBe(1);
    flood.open();
  });

  it('retries a failing item in place: its group waits, other groups go on', async () => {
    const attempts = new Map<string, number>();
    const done: string[] = [];
    const lanes = new GroupLanes<Item>({
      concurrency: 4,
      urgentReserve: 0,
      fallbackRetryMs: 1,
      onError: () => undefined,
      run: (i): Promise<LaneOutcome> => {
        const n = (attempts.get(i.id) ?? 0) + 1;
        attempts.set(i.id, n);
        if (i.text === 'flaky' && n < 3) return Promise.resolve({ done: false, retryInMs: 5 });
        done.push(i.id);
        return Promise.resolve({ done: true });
      },
    });
    lanes.push(item('a', 'flaky'));
    lanes.push(item('a', 'next'));
    lanes.push(item('b', 'other'));
    while (lanes.size > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(done.filter((id) => id.startsWith('a:'))).toEqual(['a:flaky', 'a:next']);
    expect(done.indexOf('b:other')).toBeLessThan(done.indexOf('a:flaky'));
    expect(attempts.get('a:flaky')).toBe(3);
  });

  it('starts urgent lanes first and lets them use the reserved slots', async () => {
    const started: string[] = [];
    const hold = gate();
    const lanes = new GroupLanes<Item>({
      concurrency: 1,
      urgentReserve: 1,
      fallbackRetryMs: 1,
      onError: () => undefined,
      run: async (i) => {
        started.push(i.id);
        await hold.promise;
        return { done: true };
      },
    });
    lanes.push(item('busy', 'ambient'));
    lanes.push(item('other', 'ambient'));
    lanes.push(item('asked', 'direct', true));
    await flush();
    expect(started).toEqual(['busy:ambient', 'asked:direct']);
    hold.open();
    await flush();
    await flush();
    expect(started).toContain('other:ambient');
  });

  it('retries an item whose task threw, after the fallback delay', async () => {
    let calls = 0;
    const errors: unknown[] = [];
    const lanes = new GroupLanes<Item>({
      concurrency: 1,
      urgentReserve: 0,
      fallbackRetryMs: 1,
      onError: (error) => errors.push(error),
      run: () => {
        calls++;
        return calls === 1 ? Promise.reject(new Error('boom')) : Promise.resolve({ done: true });
      },
    });
    lanes.push(item('a', '1'));
    while (lanes.size > 0) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(calls).toBe(2);
    expect(errors).toHaveLength(1);
  });

  it('runs a group holding an urgent item ahead of ordinary lanes, its earlier items first', async () => {
    const { started, open, run } = heldRuns();
    const lanes = new GroupLanes<Item>({ ...quiet, concurrency: 1, urgentReserve: 1, run });
    lanes.push(item('busy', '1'));
    lanes.push(item('other', '1'));
    lanes.push(item('asked', 'earlier'));
    await flush();
    expect(started).toEqual(['busy:1']);
    // The @ arrives behind its group's earlier message: the whole lane moves up and takes the reserved slot.
    lanes.push(item('asked', 'direct', true));
    await flush();
    expect(started).toEqual(['busy:1', 'asked:earlier']);
    open('asked:earlier');
    await flush();
    expect(started).toEqual(['busy:1', 'asked:earlier', 'asked:direct']);
    open('asked:direct');
    open('busy:1');
    await flush();
    await flush();
    expect(started).toContain('other:1');
    open('other:1');
    await flush();
    expect(lanes.size).toBe(0);
  });

  it('holds ordinary lanes of the whole process back while urgent work runs, and resumes them after', async () => {
    const shared = new UrgencyGate(1);
    const { started, open, run } = heldRuns();
    const options = { ...quiet, concurrency: 4, urgentReserve: 2, run };
    const ambient = new GroupLanes<Item>({ ...options, gate: shared });
    const direct = new GroupLanes<Item>({ ...options, gate: shared });
    ambient.push(item('a', '1'));
    ambient.push(item('b', '1'));
    await flush();
    expect(started).toEqual(['a:1', 'b:1']);
    direct.push(item('asked', 'direct', true));
    ambient.push(item('c', '1'));
    ambient.push(item('d', '1'));
    await flush();
    // Two ordinary lanes run already (more than the gate's one): none more starts while the @ runs.
    expect(started).toEqual(['a:1', 'b:1', 'asked:direct']);
    expect(shared.urgent).toBe(1);
    open('a:1');
    open('b:1');
    await flush();
    // Down to none running: one ordinary lane may run beside the urgent one.
    expect(started).toEqual(['a:1', 'b:1', 'asked:direct', 'c:1']);
    open('asked:direct');
    await flush();
    expect(shared.urgent).toBe(0);
    expect(started).toEqual(['a:1', 'b:1', 'asked:direct', 'c:1', 'd:1']);
    open('c:1');
    open('d:1');
    await flush();
    expect(ambient.size + direct.size).toBe(0);
    expect(shared.ordinary).toBe(0);
  });

  it('does not hold ordinary lanes back while an urgent item waits out a retry backoff', async () => {
    const shared = new UrgencyGate(0);
    const started: string[] = [];
    let attempts = 0;
    const lanes = new GroupLanes<Item>({
      concurrency: 4,
      urgentReserve: 1,
      fallbackRetryMs: 1,
      onError: () => undefined,
      gate: shared,
      run: (i): Promise<LaneOutcome> => {
        started.push(i.id);
        if (i.urgent && ++attempts === 1) return Promise.resolve({ done: false, retryInMs: 30 });
        return Promise.resolve({ done: true });
      },
    });
    lanes.push(item('asked', 'direct', true));
    lanes.push(item('other', '1'));
    await flush();
    await flush();
    // The @ failed once and backs off; the ordinary lane runs meanwhile.
    expect(started).toEqual(['asked:direct', 'other:1']);
    expect(shared.urgent).toBe(0);
    while (lanes.size > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(started).toEqual(['asked:direct', 'other:1', 'asked:direct']);
  });

  it('leaves the shared gate clean when stopped with urgent work held', async () => {
    const shared = new UrgencyGate(0);
    const hold = gate();
    const lanes = new GroupLanes<Item>({
      concurrency: 1,
      urgentReserve: 1,
      fallbackRetryMs: 1,
      onError: () => undefined,
      gate: shared,
      run: async () => {
        await hold.promise;
        return { done: true };
      },
    });
    lanes.push(item('a', 'direct', true));
    lanes.push(item('b', 'direct', true));
    lanes.push(item('c', 'direct', true));
    await flush();
    expect(shared.urgent).toBe(3);
    const stopping = lanes.stop();
    hold.open();
    await stopping;
    expect(shared.urgent).toBe(0);
    expect(shared.ordinary).toBe(0);
  });
});
