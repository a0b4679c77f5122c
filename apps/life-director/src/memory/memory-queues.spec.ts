import type { Queue } from 'bullmq';
import type { Clock, QunliConfig } from '@app/platform';
import { JargonMeaningsJob } from './memory-jobs.js';
import { MemoryQueues } from './memory-queues.js';

/** A queue that records what it is asked to add. */
function recordingQueue(): Queue & { added: { name: string; options: Record<string, unknown> }[] } {
  const added: { name: string; options: Record<string, unknown> }[] = [];
  const queue = {
    added,
    add: (name: string, _data: unknown, options: Record<string, unknown>) => {
      added.push({ name, options });
      return Promise.resolve({ id: `job-${added.length}` });
    },
  };
  return queue as unknown as Queue & { added: typeof added };
}

describe('the jargon scan throttle', () => {
  it('is one scan per group per product hour from the last one, not per hour of the clock', async () => {
    const maintenance = recordingQueue();
    let now = Date.UTC(2026, 11, 1, 10, 59, 59, 500);
    const clock = { nowMs: () => now, ttlMs: (productMs: number) => productMs / 10 } as unknown as Clock;
    const queues = new MemoryQueues(recordingQueue(), maintenance, clock, {} as QunliConfig);

    await queues.jargonScan('3001');
    now += 1000; // across the clock's hour
    await queues.jargonScan('3001');
    await queues.jargonScan('3002');

    const [first, second, other] = maintenance.added.map((a) => a.options);
    // Both scans of the group share one throttle key, whatever the hour; it lasts a product hour in real time.
    expect(first!.jobId).toBeUndefined();
    expect(first!.deduplication).toEqual({ id: expect.any(String), ttl: 360_000 });
    expect(second!.deduplication).toEqual(first!.deduplication);
    expect(other!.deduplication).not.toEqual(first!.deduplication);
  });
});

describe("a scan's meanings job", () => {
  it('is named after the scan: a retried scan adds nothing, a later scan asks about the same words again', async () => {
    const maintenance = recordingQueue();
    const clock = { nowMs: () => 0, ttlMs: (productMs: number) => productMs } as unknown as Clock;
    const queues = new MemoryQueues(recordingQueue(), maintenance, clock, {} as QunliConfig);
    const job = JargonMeaningsJob.create({ groupId: '3001', terms: [{ term: '芋圆', sightings: 6, users: 3 }] });

    await queues.jargonMeanings('17', job);
    await queues.jargonMeanings('17', job);
    await queues.jargonMeanings('18', job);

    const [first, retried, later] = maintenance.added.map((a) => a.options.jobId);
    expect(retried).toBe(first);
    expect(later).not.toBe(first);
  });

  it('refuses a job without words, and takes an earlier version’s one-word job as a batch of one', () => {
    expect(() => JargonMeaningsJob.create({ groupId: '3001', terms: [] })).toThrow(/terms/);
    expect(
      JargonMeaningsJob.fromSingle({ groupId: '3001', term: '芋圆', sightings: 6, users: 3, extra: 1 } as never),
    ).toEqual({ groupId: '3001', terms: [{ term: '芋圆', sightings: 6, users: 3 }] });
    expect(() => JargonMeaningsJob.fromSingle({ groupId: '3001', term: '芋圆', sightings: 0, users: 3 })).toThrow(
      /sightings/,
    );
  });
});
