import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { EventKind, Keyspace, makeEvent, type DispatchLane, type EpisodeJob } from '@app/contracts';
import { deleteKeys, sampleMessage, testRedis, uniquePrefix } from '@app/testing';
import { FairDispatchStore, type DispatchEntry, type DispatchLimits } from './fair-dispatch.store.js';

const NOW = Date.parse('2026-12-01T08:00:00Z');

function job(episodeId: string, groupId: string): EpisodeJob {
  const trigger = makeEvent({ kind: EventKind.MessageDirect, groupId, source: 'test', payload: sampleMessage('hi') });
  return { episodeId, groupId, trigger, context: [], deadline: new Date(NOW + 600_000).toISOString() };
}

function entry(id: string, groupId: string, lane: DispatchLane, mode: 'start' | 'resume' = 'start'): DispatchEntry {
  return {
    jobId: id,
    episodeId: id,
    groupId,
    lane,
    priority: lane === 'direct' ? 0 : 5,
    mode,
    deadline: NOW + 600_000,
    cost: 1,
    job: job(id, groupId),
  };
}

const limits = (over: Partial<DispatchLimits> = {}): DispatchLimits => ({
  now: NOW,
  maxRunning: 4,
  maxAmbient: 3,
  groupMaxRunning: 2,
  groupStartsPerWindow: 1000,
  windowMs: 60_000,
  quantum: 1,
  maxGrants: 32,
  ...over,
});

describe('fair dispatcher on real Redis', () => {
  let redis: Redis;
  let other: Redis;
  let prefix: string;
  let a: FairDispatchStore;

  beforeEach(() => {
    prefix = uniquePrefix('dispatch');
    redis = testRedis();
    other = testRedis();
    const keys = new Keyspace(prefix, 4);
    a = new FairDispatchStore(redis, keys);
  });

  afterEach(async () => {
    await deleteKeys(redis, prefix);
    await redis.quit();
    await other.quit();
  });

  it('grants direct before ambient, round-robin across groups, within every cap', async () => {
    for (let i = 0; i < 5; i++) await a.offer(entry(`flood-${i}`, 'g-flood', 'ambient'));
    await a.offer(entry('quiet-0', 'g-quiet', 'ambient'));
    await a.offer(entry('asked-0', 'g-asked', 'direct'));
    const granted = (await a.grant(limits())).map((e) => e.jobId);
    expect(granted[0]).toBe('asked-0');
    expect(granted).toContain('quiet-0');
    // Ambient cap 3: flood gets 2 (its group cap), quiet 1.
    expect(granted.filter((id) => id.startsWith('flood'))).toHaveLength(2);
    expect(await a.counts()).toMatchObject({
      total: 4,
      ambient: 3,
      perGroup: { 'g-flood': 2, 'g-quiet': 1, 'g-asked': 1 },
    });
    expect(await a.grant(limits())).toEqual([]);
    expect(await a.release('flood-0')).toBe(true);
    expect(await a.release('flood-0')).toBe(false);
    expect((await a.grant(limits())).map((e) => e.jobId)).toEqual(['flood-2']);
  });

  it('withdraws a waiting run and frees the slot of a running one; repeated offers are one', async () => {
    expect(await a.offer(entry('x', 'g1', 'ambient'))).toBe(true);
    expect(await a.offer(entry('x', 'g1', 'ambient'))).toBe(false);
    expect(await a.withdraw('x')).toBe('withdrawn');
    expect(await a.grant(limits())).toEqual([]);
    await a.offer(entry('y', 'g1', 'ambient'));
    expect((await a.grant(limits())).map((e) => e.jobId)).toEqual(['y']);
    expect(await a.offer(entry('y', 'g1', 'ambient'))).toBe(false);
    expect(await a.withdraw('y')).toBe('released');
    expect(await a.counts()).toMatchObject({ total: 0, ambient: 0 });
  });

  it('limits a group’s starts per window, but not the continuations of its waiting episodes', async () => {
    for (let i = 0; i < 3; i++) await a.offer(entry(`s-${i}`, 'g1', 'ambient'));
    await a.offer(entry('r-0', 'g1', 'ambient', 'resume'));
    const tight = limits({ groupStartsPerWindow: 1, groupMaxRunning: 10, maxAmbient: 10, maxRunning: 10 });
    const granted = (await a.grant(tight)).map((e) => e.jobId);
    expect(granted.filter((id) => id.startsWith('s-'))).toHaveLength(1);
    expect(granted).toContain('r-0');
    expect(await a.grant(tight)).toEqual([]);
    expect((await a.grant({ ...tight, now: NOW + 61_000 })).map((e) => e.jobId)).toEqual(['s-1']);
  });

  it('drops runs whose deadline passed instead of granting them', async () => {
    await a.offer({ ...entry('late', 'g1', 'direct'), deadline: NOW - 1 });
    await a.offer(entry('fine', 'g1', 'direct'));
    expect((await a.grant(limits())).map((e) => e.jobId)).toEqual(['fine']);
    expect((await a.counts()).waiting).toBe(0);
  });

  it('property: two processes granting at once never exceed a cap, and no group starves', async () => {
    const ops = fc.array(
      fc.oneof(
        fc.record({ op: fc.constant('offer' as const), group: fc.integer({ min: 0, max: 5 }), direct: fc.boolean() }),
        fc.record({ op: fc.constant('grant' as const), both: fc.boolean() }),
        fc.record({ op: fc.constant('release' as const), pick: fc.nat() }),
      ),
      { maxLength: 40 },
    );
    const caps = fc.record({
      maxRunning: fc.integer({ min: 1, max: 6 }),
      maxAmbient: fc.integer({ min: 0, max: 6 }),
      groupMaxRunning: fc.integer({ min: 1, max: 3 }),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(caps, ops, async (cap, sequence) => {
        run++;
        const keys = new Keyspace(`${prefix}-${run}`, 4);
        const p = new FairDispatchStore(redis, keys);
        const q = new FairDispatchStore(other, keys);
        const lim = limits({ ...cap, maxAmbient: Math.min(cap.maxAmbient, cap.maxRunning) });
        const running: DispatchEntry[] = [];
        const offered = new Map<string, DispatchEntry>();
        let n = 0;
        const check = async () => {
          const counts = await p.counts();
          expect(counts.total).toBe(running.length);
          expect(counts.total).toBeLessThanOrEqual(lim.maxRunning);
          expect(running.filter((e) => e.lane === 'ambient').length).toBeLessThanOrEqual(lim.maxAmbient);
          for (const value of Object.values(counts.perGroup)) expect(value).toBeLessThanOrEqual(lim.groupMaxRunning);
        };
        const grant = async (both: boolean) => {
          const rounds = await Promise.all(both ? [p.grant(lim), q.grant(lim)] : [p.grant(lim)]);
          for (const granted of rounds) {
            for (const e of granted) {
              expect(offered.delete(e.jobId)).toBe(true);
              running.push(e);
            }
          }
          await check();
        };
        for (const step of sequence) {
          if (step.op === 'offer') {
            const e = entry(`j${n++}`, `g${step.group}`, step.direct ? 'direct' : 'ambient');
            offered.set(e.jobId, e);
            await p.offer(e);
          } else if (step.op === 'grant') {
            await grant(step.both);
          } else if (running.length > 0) {
            const [done] = running.splice(step.pick % running.length, 1);
            await q.release(done!.jobId);
          }
        }
        // Drain: keep finishing the oldest run and granting; every offered run must get its turn (no starvation),
        // unless it can never run (ambient with an ambient cap of 0).
        for (let guard = 0; guard < 500 && (offered.size > 0 || running.length > 0); guard++) {
          await grant(guard % 2 === 0);
          if (running.length > 0) await p.release(running.shift()!.jobId);
          if (running.length === 0 && [...offered.values()].every((e) => e.lane === 'ambient' && lim.maxAmbient === 0))
            break;
        }
        for (const e of offered.values()) expect(e.lane === 'ambient' && lim.maxAmbient === 0).toBe(true);
        await deleteKeys(redis, keys.prefix);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it('serves equally busy groups in turn (deficit round-robin)', async () => {
    for (let i = 0; i < 6; i++) {
      for (const g of ['g1', 'g2', 'g3']) await a.offer(entry(`${g}-${i}`, g, 'ambient'));
    }
    const order: string[] = [];
    const one = limits({ maxRunning: 1, maxAmbient: 1 });
    for (let i = 0; i < 18; i++) {
      const [granted] = await a.grant(one);
      order.push(granted!.groupId!);
      await a.release(granted!.jobId);
    }
    for (let i = 0; i < 18; i += 3) expect(new Set(order.slice(i, i + 3))).toEqual(new Set(['g1', 'g2', 'g3']));
  });
});
