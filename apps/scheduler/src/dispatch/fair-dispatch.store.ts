import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, type DispatchLane, type EpisodeJob } from '@app/contracts';
import { REDIS } from '@app/platform';

/** One run of an episode waiting for (or holding) a slot. */
export interface DispatchEntry {
  jobId: string;
  episodeId: string;
  groupId: string | null;
  lane: DispatchLane;
  /** 0 most urgent … 9 (the event's priority; direct is 0). */
  priority: number;
  mode: 'start' | 'resume';
  /** Product ms after which the entry is dropped instead of granted. */
  deadline: number;
  /** DRR cost of the run (1 today; a weight per kind of work later). */
  cost: number;
  job: EpisodeJob;
}

export interface DispatchLimits {
  /** Product time now. */
  now: number;
  maxRunning: number;
  maxAmbient: number;
  groupMaxRunning: number;
  groupStartsPerWindow: number;
  windowMs: number;
  /** DRR quantum added to a group's deficit per visit. */
  quantum: number;
  maxGrants: number;
}

export interface DispatchCounts {
  total: number;
  ambient: number;
  waiting: number;
  perGroup: Record<string, number>;
}

/*
 * The fair dispatcher's state lives in Redis under one hash tag (`Keyspace.dispatch`), global to every scheduler
 * process, and changes only through these scripts, so the caps hold however many processes grant at once.
 *
 *   waiting        hash   jobId → entry JSON
 *   running        hash   jobId → entry JSON (granted, not yet released)
 *   unstarted      zset   jobId → real ms of the grant (until its job and start command are written)
 *   q:<lane>:<g>   zset   jobId → rank × 1e13 + arrival seq (the group's queue, most urgent first; the rank is the
 *                         priority, less 10 for continuations, which go before new starts and never count as one)
 *   ring:<lane>    list   groups with waiting work, in round-robin order; inring:<lane> the same as a set
 *   deficit        hash   <lane>:<g> → DRR deficit
 *   count          hash   <g> → running; __total, __ambient
 *   starts:<g>     zset   jobId → product ms of each start (the rate window)
 *
 * KEYS[1] is the key prefix (`…:dispatch:{dispatch}:`); every key the scripts touch is that prefix + a name, so all
 * share the slot of the hash tag.
 */
const COMMON = `
local base = KEYS[1]
local function release(jobId)
  local raw = redis.call('HGET', base .. 'running', jobId)
  if not raw then return 0 end
  local entry = cjson.decode(raw)
  local group = entry.groupId or ''
  redis.call('HDEL', base .. 'running', jobId)
  redis.call('ZREM', base .. 'unstarted', jobId)
  if redis.call('HINCRBY', base .. 'count', group, -1) <= 0 then redis.call('HDEL', base .. 'count', group) end
  redis.call('HINCRBY', base .. 'count', '__total', -1)
  if entry.lane == 'ambient' then redis.call('HINCRBY', base .. 'count', '__ambient', -1) end
  return 1
end
`;

const OFFER = `${COMMON}
local jobId, json, group, lane, priority = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if redis.call('HEXISTS', base .. 'waiting', jobId) == 1 or redis.call('HEXISTS', base .. 'running', jobId) == 1 then
  return 0
end
redis.call('HSET', base .. 'waiting', jobId, json)
local seq = redis.call('INCR', base .. 'seq')
redis.call('ZADD', base .. 'q:' .. lane .. ':' .. group, priority * 1e13 + seq, jobId)
if redis.call('SADD', base .. 'inring:' .. lane, group) == 1 then redis.call('RPUSH', base .. 'ring:' .. lane, group) end
return 1
`;

const RELEASE = `${COMMON}
return release(ARGV[1])
`;

/** 1: removed while waiting; 2: it ran, its slot is freed; 0: unknown. */
const WITHDRAW = `${COMMON}
local jobId = ARGV[1]
local raw = redis.call('HGET', base .. 'waiting', jobId)
if raw then
  local entry = cjson.decode(raw)
  redis.call('ZREM', base .. 'q:' .. entry.lane .. ':' .. (entry.groupId or ''), jobId)
  redis.call('HDEL', base .. 'waiting', jobId)
  return 1
end
if release(jobId) == 1 then return 2 end
return 0
`;

/**
 * Hand out slots: lanes in priority order (direct before ambient), deficit round-robin across the groups of a lane,
 * each group's queue most urgent first; never past the global cap, the ambient cap, a group's cap or a group's
 * start rate. Entries past their deadline are dropped. Returns the granted entries' JSON.
 * ARGV: now, maxRunning, maxAmbient, groupMax, startsPerWindow, windowMs, quantum, maxGrants, realNow.
 */
const GRANT = `${COMMON}
local now, maxRunning, maxAmbient, groupMax = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local rate, window, quantum, maxGrants, realNow = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local count = base .. 'count'
local total = tonumber(redis.call('HGET', count, '__total') or '0')
local ambient = tonumber(redis.call('HGET', count, '__ambient') or '0')
local granted = {}
for _, lane in ipairs({ 'direct', 'ambient' }) do
  local ring, inring = base .. 'ring:' .. lane, base .. 'inring:' .. lane
  local idle = 0
  while #granted < maxGrants and total < maxRunning and (lane == 'direct' or ambient < maxAmbient) do
    local n = redis.call('LLEN', ring)
    if n == 0 or idle >= n then break end
    local group = redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
    local q = base .. 'q:' .. lane .. ':' .. group
    local dkey = lane .. ':' .. group
    local starts = base .. 'starts:' .. group
    redis.call('ZREMRANGEBYSCORE', starts, '-inf', now - window)
    local deficit = tonumber(redis.call('HGET', base .. 'deficit', dkey) or '0') + quantum
    local served = false
    while #granted < maxGrants and total < maxRunning and (lane == 'direct' or ambient < maxAmbient) do
      local head = redis.call('ZRANGE', q, 0, 0)[1]
      if not head then break end
      local raw = redis.call('HGET', base .. 'waiting', head)
      if not raw then
        redis.call('ZREM', q, head)
      else
        local entry = cjson.decode(raw)
        if entry.deadline < now then
          redis.call('ZREM', q, head)
          redis.call('HDEL', base .. 'waiting', head)
        else
          local running = tonumber(redis.call('HGET', count, group) or '0')
          if running >= groupMax then break end
          if entry.mode == 'start' and redis.call('ZCARD', starts) >= rate then break end
          local cost = entry.cost or 1
          if deficit < cost then break end
          deficit = deficit - cost
          redis.call('ZREM', q, head)
          redis.call('HDEL', base .. 'waiting', head)
          redis.call('HSET', base .. 'running', head, raw)
          redis.call('ZADD', base .. 'unstarted', realNow, head)
          redis.call('HINCRBY', count, group, 1)
          redis.call('HINCRBY', count, '__total', 1)
          total = total + 1
          if lane == 'ambient' then
            redis.call('HINCRBY', count, '__ambient', 1)
            ambient = ambient + 1
          end
          if entry.mode == 'start' then redis.call('ZADD', starts, now, head) end
          granted[#granted + 1] = raw
          served = true
        end
      end
    end
    if redis.call('ZCARD', q) == 0 then
      redis.call('LREM', ring, -1, group)
      redis.call('SREM', inring, group)
      redis.call('HDEL', base .. 'deficit', dkey)
      redis.call('DEL', q)
    else
      redis.call('HSET', base .. 'deficit', dkey, served and deficit or 0)
    end
    if served then idle = 0 else idle = idle + 1 end
  end
end
return granted
`;

/**
 * The fair dispatcher's Redis side (ADR 0007): global priority order by lane, one queue per group, a global cap,
 * an ambient cap, a per-group cap and start rate, deficit round-robin across groups. Offers, grants, releases and
 * withdrawals are atomic scripts in one slot and idempotent per job id.
 */
@Injectable()
export class FairDispatchStore {
  private readonly base: string;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    keys: Keyspace,
  ) {
    this.base = keys.dispatch('');
    this.redis.defineCommand('qunliDispatchOffer', { numberOfKeys: 1, lua: OFFER });
    this.redis.defineCommand('qunliDispatchRelease', { numberOfKeys: 1, lua: RELEASE });
    this.redis.defineCommand('qunliDispatchWithdraw', { numberOfKeys: 1, lua: WITHDRAW });
    this.redis.defineCommand('qunliDispatchGrant', { numberOfKeys: 1, lua: GRANT });
  }

  private call<T>(command: string, ...args: (string | number)[]): Promise<T> {
    return (this.redis as unknown as Record<string, (...a: (string | number)[]) => Promise<T>>)[command]!(
      this.base,
      ...args,
    );
  }

  /** Queue a run; false when the job id is already waiting or running (a repeated offer). */
  async offer(entry: DispatchEntry): Promise<boolean> {
    const added = await this.call<number>(
      'qunliDispatchOffer',
      entry.jobId,
      JSON.stringify(entry),
      entry.groupId ?? '',
      entry.lane,
      entry.mode === 'resume' ? entry.priority - 10 : entry.priority,
    );
    return added === 1;
  }

  async grant(limits: DispatchLimits, realNow = Date.now()): Promise<DispatchEntry[]> {
    const granted = await this.call<string[]>(
      'qunliDispatchGrant',
      limits.now,
      limits.maxRunning,
      limits.maxAmbient,
      limits.groupMaxRunning,
      limits.groupStartsPerWindow,
      limits.windowMs,
      limits.quantum,
      limits.maxGrants,
      realNow,
    );
    return granted.map((json) => JSON.parse(json) as DispatchEntry);
  }

  /** Free a run's slot (it completed or parked itself); idempotent. */
  async release(jobId: string): Promise<boolean> {
    return (await this.call<number>('qunliDispatchRelease', jobId)) === 1;
  }

  /** Take a run out: dropped when still waiting, its slot freed when running. */
  async withdraw(jobId: string): Promise<'withdrawn' | 'released' | 'unknown'> {
    const result = await this.call<number>('qunliDispatchWithdraw', jobId);
    return result === 1 ? 'withdrawn' : result === 2 ? 'released' : 'unknown';
  }

  /** Its job and start command are written: no more sweeping. */
  async started(jobId: string): Promise<void> {
    await this.redis.zrem(`${this.base}unstarted`, jobId);
  }

  /** Runs granted more than `olderThanMs` (real) ago whose job or start command may not have been written. */
  async unstarted(olderThanMs: number, realNow = Date.now()): Promise<DispatchEntry[]> {
    const ids = await this.redis.zrangebyscore(`${this.base}unstarted`, '-inf', realNow - olderThanMs, 'LIMIT', 0, 100);
    if (ids.length === 0) return [];
    const raw = await this.redis.hmget(`${this.base}running`, ...ids);
    const out: DispatchEntry[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (raw[i]) out.push(JSON.parse(raw[i]!) as DispatchEntry);
      else await this.redis.zrem(`${this.base}unstarted`, ids[i]!);
    }
    return out;
  }

  async counts(): Promise<DispatchCounts> {
    const [count, waiting] = await Promise.all([
      this.redis.hgetall(`${this.base}count`),
      this.redis.hlen(`${this.base}waiting`),
    ]);
    const perGroup: Record<string, number> = {};
    for (const [key, value] of Object.entries(count)) if (!key.startsWith('__')) perGroup[key] = Number(value);
    return { total: Number(count.__total ?? 0), ambient: Number(count.__ambient ?? 0), waiting, perGroup };
  }
}
