import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, QunliError } from '@app/contracts';
import { REDIS } from '@app/platform';
import { PART_STATES, SETTLED_STATES, type ActionDone, type PartEntry, type ReplyPlan } from './send-ledger.js';

/** A stored value with the exact text read, the token for a compare-and-set. */
export interface Stored<T> {
  value: T;
  raw: string;
}

// Replace the field only if it still holds what the caller read ('' = absent): two drainers that race on the same
// action (a lock taken over while its first holder still runs) cannot both start sending one part.
const COMPARE_AND_SET = `
local current = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if current ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;

// The same, unless the reply's trigger is in the recalled set (then -1, nothing written): the last recall check
// before a call and the claim of the part in one step. Both keys are on one slot (caller's duty).
const CLAIM_UNLESS_RECALLED = `
if redis.call('ZSCORE', KEYS[2], ARGV[4]) then return -1 end
local current = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if current ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;

type CasRedis = Redis & {
  qunliSendLedgerCas(key: string, field: string, expected: string, value: string): Promise<number>;
  qunliSendLedgerClaim(
    key: string,
    recalled: string,
    field: string,
    expected: string,
    value: string,
    trigger: string,
  ): Promise<number>;
};

/** An action's `done` and `plan` fields as stored (`null`: absent), read in one command. */
export interface LedgerHead {
  done: string | null;
  plan: string | null;
}

/**
 * Outbound's send ledger in Redis (docs/adr/0009): one hash per partition (`keys.sendLedger(p)`), fields
 * `<actionId>:plan`, `<actionId>:<part>` and `<actionId>:done`. Transitions that are facts are written by the
 * caller inside the MULTI that appends their event (`SendLedger.field…` + `hset`); the rest go through a
 * compare-and-set.
 */
@Injectable()
export class SendLedger {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {
    this.redis.defineCommand('qunliSendLedgerCas', { numberOfKeys: 1, lua: COMPARE_AND_SET });
    this.redis.defineCommand('qunliSendLedgerClaim', { numberOfKeys: 2, lua: CLAIM_UNLESS_RECALLED });
  }

  /** A part of the plan: its index, or `f` for the one forward message. */
  static partField(actionId: string, part: number | 'f'): string {
    return `${actionId}:${part}`;
  }

  static planField(actionId: string): string {
    return `${actionId}:plan`;
  }

  static doneField(actionId: string): string {
    return `${actionId}:done`;
  }

  key(partition: number): string {
    return this.keys.sendLedger(partition);
  }

  async plan(partition: number, actionId: string): Promise<Stored<ReplyPlan> | undefined> {
    return SendLedger.parsePlan(actionId, await this.redis.hget(this.key(partition), SendLedger.planField(actionId)));
  }

  async done(partition: number, actionId: string): Promise<ActionDone | undefined> {
    return SendLedger.parseDone(actionId, await this.redis.hget(this.key(partition), SendLedger.doneField(actionId)));
  }

  /** `done` and `plan` of an action together (one HMGET), unparsed: `parseDone` / `parsePlan` read them. */
  async head(partition: number, actionId: string): Promise<LedgerHead> {
    const [done = null, plan = null] = await this.redis.hmget(
      this.key(partition),
      SendLedger.doneField(actionId),
      SendLedger.planField(actionId),
    );
    return { done, plan };
  }

  static parsePlan(actionId: string, raw: string | null): Stored<ReplyPlan> | undefined {
    return raw === null ? undefined : { raw, value: parse<ReplyPlan>(raw, SendLedger.planField(actionId), isPlan) };
  }

  static parseDone(actionId: string, raw: string | null): ActionDone | undefined {
    return raw === null
      ? undefined
      : parse<ActionDone>(raw, SendLedger.doneField(actionId), (v) => typeof (v as ActionDone).outcome === 'string');
  }

  async part(partition: number, actionId: string, part: number | 'f'): Promise<Stored<PartEntry> | undefined> {
    const field = SendLedger.partField(actionId, part);
    const raw = await this.redis.hget(this.key(partition), field);
    return raw === null ? undefined : { raw, value: parse<PartEntry>(raw, field, isPart) };
  }

  /** Write `value` at `field` only if it still holds `expected` (the raw text read before; `undefined`: absent). */
  async compareAndSet<T>(
    partition: number,
    field: string,
    expected: Stored<T> | undefined,
    value: T,
  ): Promise<Stored<T> | undefined> {
    const raw = JSON.stringify(value);
    const done = await (this.redis as CasRedis).qunliSendLedgerCas(
      this.key(partition),
      field,
      expected?.raw ?? '',
      raw,
    );
    return done === 1 ? { value, raw } : undefined;
  }

  /**
   * `compareAndSet`, unless `trigger` is a member of the sorted set `recalled` (then `'recalled'`, nothing
   * written). `recalled` must be on the partition's slot.
   */
  async compareAndSetUnlessRecalled<T>(
    partition: number,
    field: string,
    expected: Stored<T> | undefined,
    value: T,
    recalled: { key: string; trigger: string },
  ): Promise<Stored<T> | 'recalled' | undefined> {
    const raw = JSON.stringify(value);
    const done = await (this.redis as CasRedis).qunliSendLedgerClaim(
      this.key(partition),
      recalled.key,
      field,
      expected?.raw ?? '',
      raw,
      recalled.trigger,
    );
    return done === 1 ? { value, raw } : done === -1 ? 'recalled' : undefined;
  }

  /**
   * Delete the entries of actions that finished before `before` (their `done` marker is older). Unfinished actions
   * are kept whatever their age: they decide what a restart does. Returns how many fields were deleted.
   */
  async prune(partition: number, before: Date): Promise<number> {
    const key = this.key(partition);
    const cutoff = before.toISOString();
    const finished = new Set<string>();
    const fields: string[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(key, cursor, 'COUNT', 500);
      cursor = next;
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const field = flat[i]!;
        fields.push(field);
        if (!field.endsWith(':done')) continue;
        const done = tryParse(flat[i + 1]!) as Partial<ActionDone> | undefined;
        if (typeof done?.at === 'string' && done.at < cutoff) finished.add(field.slice(0, -':done'.length));
      }
    } while (cursor !== '0');
    const stale = fields.filter((field) => finished.has(field.slice(0, field.lastIndexOf(':'))));
    let deleted = 0;
    for (let i = 0; i < stale.length; i += 500) deleted += await this.redis.hdel(key, ...stale.slice(i, i + 500));
    return deleted;
  }
}

function isPart(value: unknown): boolean {
  const entry = value as Partial<PartEntry>;
  return PART_STATES.includes(entry.state as PartEntry['state']) && typeof entry.attempts === 'number';
}

function isPlan(value: unknown): boolean {
  const plan = value as Partial<ReplyPlan>;
  return (plan.form === 'text' || plan.form === 'forward') && Array.isArray(plan.parts);
}

function tryParse(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

function parse<T>(raw: string, field: string, valid: (value: unknown) => boolean): T {
  const value = tryParse(raw);
  if (typeof value !== 'object' || value === null || !valid(value)) {
    throw new QunliError('SEND.LEDGER_CORRUPT', `send ledger entry ${field} is unreadable`, {
      field,
      raw: raw.slice(0, 200),
    });
  }
  return value as T;
}

/** Whether a part needs nothing more. */
export function isSettled(entry: PartEntry | undefined): boolean {
  return entry !== undefined && SETTLED_STATES.has(entry.state);
}
