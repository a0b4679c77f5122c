import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { EventKind, Keyspace, makeEvent, PRIORITY, type EventEnvelope, type TimerPurpose } from '@app/contracts';
import {
  passOverAfter,
  passOverArgument,
  passOverBefore,
  SEAL_FIELD,
  sealIfValid,
  type StreamContext,
} from '@app/event-bus';
import { REDIS } from '@app/platform';
import type { TimerSpec } from '../decisions/group-state.js';

/** What a durable timer holds besides its due time (the `timerData` hash). */
export interface StoredTimer {
  timerId: string;
  purpose: TimerPurpose;
  /** Product epoch ms. */
  dueAt: number;
  setAt: number;
  groupId: string | null;
  subjectEventId?: string;
  episodeId?: string;
  data?: Record<string, unknown>;
  /** Fired at direct priority (`TimerSpec.urgent`). */
  urgent?: boolean;
}

export interface DueTimer {
  timerId: string;
  /** The score exactly as Redis holds it: the fire checks it is unchanged. */
  score: string;
}

/** The groups a `timer.fired` passes over: every per-event group but the scheduler's. */
const PASS_OVER_FIRED = passOverArgument([EventKind.TimerFired]);

/**
 * Fires due timers: for each, only if its score is still what the poller saw (not moved, not cancelled, not fired
 * by a previous owner), remove it and append its `timer.fired` to the partition stream — in one script, so a timer
 * fires exactly once whoever runs it. KEYS: timers, timer data, stream. ARGV: the groups to pass over (ADR 0044),
 * then (timerId, score, envelope JSON, seal)… — the seal (ADR 0022) spares every reader class-validator; an empty
 * one stores the entry unsealed.
 */
const FIRE = `
${passOverBefore('KEYS[3]', 'ARGV[1]')}
local fired, last = 0, nil
for i = 2, #ARGV, 4 do
  local id, score, json, seal = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local current = redis.call('ZSCORE', KEYS[1], id)
  if current and current == score then
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
    if seal == '' then
      last = redis.call('XADD', KEYS[3], '*', 'k', '${EventKind.TimerFired}', 'e', json)
    else
      last = redis.call('XADD', KEYS[3], '*', 'k', '${EventKind.TimerFired}', 'e', json, '${SEAL_FIELD}', seal)
    end
    fired = fired + 1
  end
end
${passOverAfter('KEYS[3]', 'last', 'fired')}
return fired
`;

/**
 * A wheel's poll of one partition: up to ARGV[2] timers due by ARGV[1] (product ms), each as (id, score, data or
 * nil), and the score of the earliest timer after ARGV[1] (nil: none), so the wheel knows how long it may sleep.
 * KEYS: timers, timer data.
 */
const DUE = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
if #due > 0 then
  local ids = {}
  for i = 1, #due, 2 do ids[#ids + 1] = due[i] end
  local data = redis.call('HMGET', KEYS[2], unpack(ids))
  for i = 1, #ids do
    out[#out + 1] = ids[i]
    out[#out + 1] = due[i * 2]
    out[#out + 1] = data[i]
  end
  -- A full batch: the wheel polls again at once, so what comes next does not matter yet.
  if #ids >= tonumber(ARGV[2]) then return {out} end
end
local after = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
return {out, after[2]}
`;

/** What one poll of a partition found (see `DUE`). */
export interface DuePoll {
  /** Due timers, earliest first; `timer` is undefined when its data is gone. */
  due: (DueTimer & { timer: StoredTimer | undefined })[];
  /** Product ms of the earliest timer not yet due, or null. */
  next: number | null;
}

/**
 * The scheduler's durable timers: per partition, a sorted set of due times (product ms) and a hash of what each
 * timer is. Timers are set and cancelled in the commit of the state that needs them (`stage…`), and fired by the
 * partition's owner (`TimerWheel`) as `timer.fired` events in the same partition, so the group's order holds.
 */
@Injectable()
export class TimerStore {
  private readonly setListeners: ((partition: number, dueAt: number, urgent: boolean) => void)[] = [];

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {
    this.redis.defineCommand('qunliFireTimers', { numberOfKeys: 3, lua: FIRE });
    this.redis.defineCommand('qunliDueTimers', { numberOfKeys: 2, lua: DUE });
  }

  /**
   * Call `listener` with (partition, due time, urgent) for every timer this process sets, once the commit that set
   * it has applied: the wheel sleeps until the earliest timer it knows of, so it must hear of new ones, and wakes
   * for an urgent one at its due time rather than on its beat (ADR 0046).
   */
  onSet(listener: (partition: number, dueAt: number, urgent: boolean) => void): void {
    this.setListeners.push(listener);
  }

  stageSet(ctx: StreamContext, groupId: string | null, spec: TimerSpec, setAt: number): void {
    const stored: StoredTimer = { ...spec, setAt, groupId };
    ctx.stage('ZADD', [this.keys.timers(ctx.partition)], spec.dueAt, spec.timerId);
    ctx.stage('HSET', [this.keys.timerData(ctx.partition)], spec.timerId, JSON.stringify(stored));
    if (this.setListeners.length > 0) {
      ctx.afterCommit(() => {
        for (const listener of this.setListeners) listener(ctx.partition, spec.dueAt, spec.urgent === true);
      });
    }
  }

  stageCancel(ctx: StreamContext, timerId: string): void {
    ctx.stage('ZREM', [this.keys.timers(ctx.partition)], timerId);
    ctx.stage('HDEL', [this.keys.timerData(ctx.partition)], timerId);
  }

  /**
   * The timers of `partition` due by `nowMs` (at most `limit`, earliest first) with what each is, and the due time
   * of the earliest one after `nowMs` (null: none): one round trip (`DUE`).
   */
  async due(partition: number, nowMs: number, limit: number): Promise<DuePoll> {
    const [flat, next] = await (
      this.redis as unknown as {
        qunliDueTimers(...a: (string | number)[]): Promise<[(string | null)[], string | null]>;
      }
    ).qunliDueTimers(this.keys.timers(partition), this.keys.timerData(partition), nowMs, limit);
    const due: DuePoll['due'] = [];
    for (let i = 0; i < flat.length; i += 3) {
      const json = flat[i + 2];
      due.push({
        timerId: flat[i]!,
        score: flat[i + 1]!,
        timer: json === null || json === undefined ? undefined : (JSON.parse(json) as StoredTimer),
      });
    }
    return { due, next: next === null || next === undefined ? null : Number(next) };
  }

  /** Fire these timers (see `FIRE`); resolves to how many fired here. */
  async fire(partition: number, timers: { due: DueTimer; event: EventEnvelope }[]): Promise<number> {
    if (timers.length === 0) return 0;
    const args = timers.flatMap(({ due, event }) => {
      const { bytes, seal } = sealIfValid(event);
      return [due.timerId, due.score, bytes, seal];
    });
    return (
      this.redis as unknown as { qunliFireTimers(...a: (string | number | Buffer)[]): Promise<number> }
    ).qunliFireTimers(
      this.keys.timers(partition),
      this.keys.timerData(partition),
      this.keys.stream(partition),
      PASS_OVER_FIRED,
      ...args,
    );
  }

  /** A timer whose data is gone (should not happen): drop it so it is not polled forever. */
  async drop(partition: number, timerId: string): Promise<void> {
    await this.redis.zrem(this.keys.timers(partition), timerId);
  }

  /** The firing event of a stored timer. */
  static firedEvent(timer: StoredTimer, now: Date): EventEnvelope {
    return makeEvent({
      kind: EventKind.TimerFired,
      groupId: timer.groupId,
      source: 'scheduler',
      createdAt: now,
      // A timer someone waits on fires as urgent work: its group's lane goes ahead of ambient ones (ADR 0037).
      ...(timer.urgent ? { priority: PRIORITY.direct } : {}),
      ...(timer.subjectEventId ? { evidenceMessageIds: [timer.subjectEventId] } : {}),
      payload: {
        timerId: timer.timerId,
        purpose: timer.purpose,
        dueAt: new Date(timer.dueAt).toISOString(),
        setAt: new Date(timer.setAt).toISOString(),
        ...(timer.subjectEventId !== undefined ? { subjectEventId: timer.subjectEventId } : {}),
        ...(timer.episodeId !== undefined ? { episodeId: timer.episodeId } : {}),
        ...(timer.data !== undefined ? { data: timer.data } : {}),
      },
    });
  }
}
