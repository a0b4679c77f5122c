import { GroupCommit } from './group-commit.js';

/** A writer that records each write and finishes it only when told to. */
function gatedWriter(fail: (items: number[]) => boolean = () => false) {
  const writes: number[][] = [];
  const gates: (() => void)[] = [];
  const write = (items: number[]) =>
    new Promise<void>((resolve, reject) => {
      writes.push(items);
      gates.push(() => (fail(items) ? reject(new Error(`poison in ${items.join(',')}`)) : resolve()));
    });
  const openNext = async () => {
    while (gates.length === 0) await new Promise((r) => setTimeout(r, 1));
    gates.shift()!();
  };
  return { writes, write, openNext };
}

const settled = (p: Promise<void>) =>
  p.then(
    () => 'written',
    (error: Error) => error.message,
  );

describe('GroupCommit', () => {
  it('writes batches handed in while a write runs together, in submission order, in the next write', async () => {
    const writer = gatedWriter();
    const commits = new GroupCommit<number>({ write: writer.write, intervalMs: 0, maxItems: 100, concurrency: 1 });
    const first = commits.submit([1, 2]);
    await writer.openNext();
    await first;
    // The next ones arrive while the second write runs.
    const second = commits.submit([3]);
    while (writer.writes.length < 2) await new Promise((r) => setTimeout(r, 1));
    const third = commits.submit([4, 5]);
    const fourth = commits.submit([6]);
    await writer.openNext();
    await second;
    await writer.openNext();
    await Promise.all([third, fourth]);
    expect(writer.writes).toEqual([[1, 2], [3], [4, 5, 6]]);
  });

  it('waits the interval between two writes, so a burst shares one', async () => {
    const writes: number[][] = [];
    const commits = new GroupCommit<number>({
      write: async (items) => void writes.push(items),
      intervalMs: 40,
      maxItems: 100,
      concurrency: 1,
    });
    await commits.submit([1]);
    const started = performance.now();
    await Promise.all([commits.submit([2]), commits.submit([3]), commits.submit([4])]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    expect(writes).toEqual([[1], [2, 3, 4]]);
  });

  it('takes whole submissions up to the cap, and a larger one alone', async () => {
    const writer = gatedWriter();
    const commits = new GroupCommit<number>({ write: writer.write, intervalMs: 0, maxItems: 3, concurrency: 1 });
    const all = [commits.submit([1]), commits.submit([2, 3]), commits.submit([4, 5, 6, 7]), commits.submit([8])];
    for (let i = 0; i < 3; i++) await writer.openNext();
    await Promise.all(all);
    expect(writer.writes).toEqual([[1, 2, 3], [4, 5, 6, 7], [8]]);
  });

  it('starts another write beside a slow one once the interval has passed, up to the concurrency', async () => {
    const writer = gatedWriter();
    const commits = new GroupCommit<number>({ write: writer.write, intervalMs: 10, maxItems: 100, concurrency: 2 });
    const first = commits.submit([1]);
    while (writer.writes.length < 1) await new Promise((r) => setTimeout(r, 1));
    const second = commits.submit([2]);
    while (writer.writes.length < 2) await new Promise((r) => setTimeout(r, 1));
    // Two in flight: a third waits for a slot and then takes everything that waits.
    const third = [commits.submit([3]), commits.submit([4])];
    await new Promise((r) => setTimeout(r, 30));
    expect(writer.writes).toEqual([[1], [2]]);
    await writer.openNext();
    await first;
    while (writer.writes.length < 3) await new Promise((r) => setTimeout(r, 1));
    expect(writer.writes[2]).toEqual([3, 4]);
    await writer.openNext();
    await writer.openNext();
    await Promise.all([second, ...third]);
  });

  it('writes each submission again on its own when a shared write fails: only the poison one fails', async () => {
    const writer = gatedWriter((items) => items.includes(13));
    const commits = new GroupCommit<number>({ write: writer.write, intervalMs: 0, maxItems: 100, concurrency: 1 });
    const blocker = commits.submit([0]);
    while (writer.writes.length === 0) await new Promise((r) => setTimeout(r, 1));
    const outcomes = [commits.submit([11, 12]), commits.submit([13]), commits.submit([14])].map(settled);
    await writer.openNext(); // [0]
    await blocker;
    for (let i = 0; i < 4; i++) await writer.openNext(); // shared, then each of the three alone
    expect(await Promise.all(outcomes)).toEqual(['written', 'poison in 13', 'written']);
    expect(writer.writes).toEqual([[0], [11, 12, 13, 14], [11, 12], [13], [14]]);
  });

  it('rejects a lone failing submission once and keeps writing later ones', async () => {
    let calls = 0;
    const commits = new GroupCommit<number>({
      write: async () => {
        if (++calls === 1) throw new Error('down');
      },
      intervalMs: 0,
      maxItems: 100,
      concurrency: 1,
    });
    await expect(commits.submit([1])).rejects.toThrow('down');
    await expect(commits.submit([2])).resolves.toBeUndefined();
    expect(calls).toBe(2);
  });
});
