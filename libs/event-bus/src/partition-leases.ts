import type { Redis } from 'ioredis';
import type { Keyspace } from '@app/contracts';
import { fnv1a32 } from '@app/contracts';

const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;
// Free, or still held by this instance id from a previous life (a restart with a stable id, e.g. a pod name).
const ACQUIRE = `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

export interface LeaseListener {
  /** The partition is ours: start reading it. */
  acquired(partition: number): Promise<void>;
  /** Stop reading the partition (finish in-flight work first). `lost` when the lease expired under us. */
  released(partition: number, lost: boolean): Promise<void>;
}

/**
 * Which partitions this process owns for one consumer group. Members heartbeat in a sorted set; each aims for
 * ceil(partitions / live members) leases, taking free ones and giving back extras, so replicas of a service
 * split the partitions between them and take over a dead member's partitions when its leases expire.
 * One owner per partition keeps each group's events in order.
 */
export class PartitionLeases {
  private readonly owned = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly group: string,
    private readonly instanceId: string,
    private readonly leaseMs: number,
    private readonly listener: LeaseListener,
    private readonly onError: (error: unknown) => void,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.tick();
    this.timer = setInterval(
      () => {
        this.ticking = this.ticking.then(() => this.tick()).catch(this.onError);
      },
      Math.max(100, Math.floor(this.leaseMs / 3)),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    for (const partition of [...this.owned]) await this.release(partition);
    await this.redis.zrem(this.keys.members(this.group), this.instanceId);
  }

  /** One heartbeat: announce ourselves, renew, then give back or take partitions to reach our share. */
  async tick(): Promise<void> {
    if (this.stopped) return;
    const now = Date.now();
    const members = this.keys.members(this.group);
    const [, , live] = (await this.redis
      .multi()
      .zadd(members, now + this.leaseMs, this.instanceId)
      .zremrangebyscore(members, '-inf', now)
      .zcard(members)
      .exec()
      .then((results) => results?.map(([error, value]) => (error ? Promise.reject(error) : value)))) as [
      unknown,
      unknown,
      number,
    ];
    const share = Math.ceil(this.keys.partitions / Math.max(1, live));

    // Renew every lease first, all at once: stopping a lost partition's reader below waits for its handlers, and
    // must never delay the renewal of the others (a slow stop would otherwise cascade into losing them all).
    const held = [...this.owned];
    const renewed = await Promise.all(
      held.map(
        (partition) =>
          this.redis.eval(
            RENEW,
            1,
            this.keys.lease(this.group, partition),
            this.instanceId,
            this.leaseMs,
          ) as Promise<number>,
      ),
    );
    for (let i = 0; i < held.length; i++) {
      if (renewed[i] === 1) continue;
      this.owned.delete(held[i]!);
      await this.listener.released(held[i]!, true);
    }

    const surplus = [...this.owned].sort((a, b) => b - a).slice(0, Math.max(0, this.owned.size - share));
    for (const partition of surplus) await this.release(partition);

    if (this.owned.size >= share) return;
    const start = fnv1a32(this.instanceId) % this.keys.partitions;
    for (let i = 0; i < this.keys.partitions && this.owned.size < share && !this.stopped; i++) {
      const partition = (start + i) % this.keys.partitions;
      if (this.owned.has(partition)) continue;
      const taken = (await this.redis.eval(
        ACQUIRE,
        1,
        this.keys.lease(this.group, partition),
        this.instanceId,
        this.leaseMs,
      )) as number;
      if (taken === 1) {
        this.owned.add(partition);
        await this.listener.acquired(partition);
      }
    }
  }

  private async release(partition: number): Promise<void> {
    this.owned.delete(partition);
    await this.listener.released(partition, false);
    await this.redis.eval(RELEASE, 1, this.keys.lease(this.group, partition), this.instanceId);
  }
}
