import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, QunliError } from '@app/contracts';
import { REDIS } from '@app/platform';
import { LEDGER_STATES, type LedgerEntry } from './send-ledger.js';

/** A ledger entry together with the exact stored text, the token for a compare-and-set. */
export interface StoredEntry {
  entry: LedgerEntry;
  raw: string;
}

// Replace the field only if it still holds what the caller read ('' = absent): two handlers that race on the
// same action (a reclaimed entry while the first is still sending) cannot both start sending one segment.
const COMPARE_AND_SET = `
local current = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if current ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;

type CasRedis = Redis & {
  qunliSendLedgerCas(key: string, field: string, expected: string, value: string): Promise<number>;
};

/**
 * Outbound's send ledger in Redis: one hash per partition (`keys.sendLedger(p)`), field `<actionId>:<segment>`,
 * value JSON `{state, attempts, onebotMessageId?, at, error?, retcode?}`. Written directly (not staged with the
 * ack) because it must be durable before, and right after, the side effect it guards.
 */
@Injectable()
export class SendLedger {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {
    this.redis.defineCommand('qunliSendLedgerCas', { numberOfKeys: 1, lua: COMPARE_AND_SET });
  }

  static field(actionId: string, segment: number): string {
    return `${actionId}:${segment}`;
  }

  /** Entries of segments `0 … count-1` of one action, `undefined` where none was written yet. */
  async read(partition: number, actionId: string, count: number): Promise<(StoredEntry | undefined)[]> {
    const fields = Array.from({ length: count }, (_, i) => SendLedger.field(actionId, i));
    const raws = await this.redis.hmget(this.keys.sendLedger(partition), ...fields);
    return raws.map((raw, i) => (raw === null ? undefined : { raw, entry: parseEntry(raw, fields[i]!) }));
  }

  /**
   * Write `entry` only if the field still holds `expected` (the raw text read before, or `undefined` for absent).
   * Returns the new stored entry, or `undefined` when someone else changed it first.
   */
  async compareAndSet(
    partition: number,
    actionId: string,
    segment: number,
    expected: StoredEntry | undefined,
    entry: LedgerEntry,
  ): Promise<StoredEntry | undefined> {
    const raw = JSON.stringify(entry);
    const done = await (this.redis as CasRedis).qunliSendLedgerCas(
      this.keys.sendLedger(partition),
      SendLedger.field(actionId, segment),
      expected?.raw ?? '',
      raw,
    );
    return done === 1 ? { entry, raw } : undefined;
  }

  /**
   * Delete settled entries (sent, failed, unknown) last written before `before`. Entries still `pending` or
   * `sending` are kept whatever their age: they decide what a redelivery does. Returns how many were deleted.
   */
  async prune(partition: number, before: Date): Promise<number> {
    const key = this.keys.sendLedger(partition);
    const cutoff = before.toISOString();
    let cursor = '0';
    let deleted = 0;
    do {
      const [next, flat] = await this.redis.hscan(key, cursor, 'COUNT', 500);
      cursor = next;
      const stale: string[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const entry = tryParse(flat[i + 1]!);
        const settled = entry?.state === 'sent' || entry?.state === 'failed' || entry?.state === 'unknown';
        if (settled && entry.at < cutoff) stale.push(flat[i]!);
      }
      if (stale.length > 0) deleted += await this.redis.hdel(key, ...stale);
    } while (cursor !== '0');
    return deleted;
  }

  /** Record an outcome unconditionally: what the implementation answered is the truth, whoever asked. */
  async write(partition: number, actionId: string, segment: number, entry: LedgerEntry): Promise<StoredEntry> {
    const raw = JSON.stringify(entry);
    await this.redis.hset(this.keys.sendLedger(partition), SendLedger.field(actionId, segment), raw);
    return { entry, raw };
  }
}

/** For the sweeper: an unreadable entry is left in place (the consumer reports it when it meets it). */
function tryParse(raw: string): LedgerEntry | undefined {
  try {
    return parseEntry(raw, '');
  } catch {
    return undefined;
  }
}

function parseEntry(raw: string, field: string): LedgerEntry {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    value = undefined;
  }
  const entry = value as Partial<LedgerEntry> | undefined;
  if (
    typeof entry !== 'object' ||
    entry === null ||
    !LEDGER_STATES.includes(entry.state as LedgerEntry['state']) ||
    typeof entry.attempts !== 'number'
  ) {
    throw new QunliError('SEND.LEDGER_CORRUPT', `send ledger entry ${field} is not a ledger entry`, { field, raw });
  }
  return entry as LedgerEntry;
}
