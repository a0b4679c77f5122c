import type { Redis } from 'ioredis';
import { DEFER_ACKS_MS, DeferredAcks } from './deferred-acks.js';

function fakeRedis(failFirst = 0) {
  const calls: { at: number; stream: string; group: string; ids: string[] }[] = [];
  let failures = failFirst;
  const redis = {
    xack: async (stream: string, group: string, ...ids: string[]) => {
      if (failures-- > 0) throw new Error('connection lost');
      calls.push({ at: performance.now(), stream, group, ids });
      return ids.length;
    },
  } as unknown as Redis;
  return { redis, calls };
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('DeferredAcks', () => {
  it('sends the skipped entries of each stream in one XACK after the delay, and holds them until then', async () => {
    const { redis, calls } = fakeRedis();
    const acks = new DeferredAcks(redis, 'outbound', () => undefined);
    const started = performance.now();
    acks.add('s:{p0}', ['1-0']);
    acks.add('s:{p1}', ['1-1']);
    acks.add('s:{p0}', ['2-0', '3-0']);
    expect(acks.holds('s:{p0}', '2-0')).toBe(true);
    expect(calls).toHaveLength(0);
    await until(() => calls.length === 2);
    expect(calls.map(({ stream, group, ids }) => ({ stream, group, ids }))).toEqual([
      { stream: 's:{p0}', group: 'outbound', ids: ['1-0', '2-0', '3-0'] },
      { stream: 's:{p1}', group: 'outbound', ids: ['1-1'] },
    ]);
    expect(calls[0]!.at - started).toBeGreaterThanOrEqual(DEFER_ACKS_MS - 5);
    expect(acks.holds('s:{p0}', '2-0')).toBe(false);
  });

  it('flushes one stream at once on demand (a reader stopping), leaving the others to their timer', async () => {
    const { redis, calls } = fakeRedis();
    const acks = new DeferredAcks(redis, 'g', () => undefined);
    acks.add('a', ['1-0']);
    acks.add('b', ['2-0']);
    await acks.flush('a');
    expect(calls.map((c) => c.stream)).toEqual(['a']);
    expect(acks.holds('b', '2-0')).toBe(true);
    await until(() => calls.length === 2);
    expect(calls.map((c) => c.stream)).toEqual(['a', 'b']);
  });

  it('keeps what a failed XACK did not send, reports it, and sends it later', async () => {
    const { redis, calls } = fakeRedis(1);
    const errors: unknown[] = [];
    const acks = new DeferredAcks(redis, 'g', (e) => errors.push(e));
    acks.add('a', ['1-0', '2-0']);
    await until(() => errors.length === 1);
    expect(acks.holds('a', '1-0')).toBe(true);
    await until(() => calls.length === 1);
    expect(calls[0]!.ids).toEqual(['1-0', '2-0']);
  });
});
