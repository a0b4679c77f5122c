import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { REDIS } from '@app/platform';

export interface ScrubReport {
  keysDeleted: number;
  elementsRemoved: number;
  streamEntriesDeleted: number;
  /** Jobs that could not be removed because a worker holds them right now. */
  jobsBusy: number;
}

/** What makes a Redis value a trace: it names one of these (quoted, as JSON writes ids) or contains the id. */
export interface TraceMatcher {
  /** Strings matched as whole JSON strings (`"1234"`) anywhere in a value: user ids. */
  quoted: readonly string[];
  /** Strings matched anywhere: event ids (UUIDs, no false positives). */
  anywhere: ReadonlySet<string>;
}

function matches(text: string, m: TraceMatcher): boolean {
  for (const q of m.quoted) if (text.includes(`"${q}"`)) return true;
  if (m.anywhere.size === 0) return false;
  for (const id of m.anywhere) if (text.includes(id)) return true;
  return false;
}

function namesTrace(key: string, m: TraceMatcher): boolean {
  for (const q of m.quoted) if (key.includes(`private:${q}`)) return true;
  for (const id of m.anywhere) if (key.includes(id)) return true;
  return false;
}

/**
 * Removes every trace of erased events and people from a deployment's Redis keyspace: stream entries (the hot
 * log, dead letters, BullMQ event streams), list items (recent windows), hash fields (event states, ledgers,
 * job data), set and sorted-set members (inboxes, memory thread buffers), string values (dedup keys). Generic on
 * purpose: it walks every key under the prefix, so state added by later issues is covered too. BullMQ jobs are
 * removed whole (a job hash without its data would be corrupt); a job a worker holds is reported, not touched.
 */
@Injectable()
export class RedisScrubber {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  async scrub(matcher: TraceMatcher): Promise<ScrubReport> {
    const report: ScrubReport = { keysDeleted: 0, elementsRemoved: 0, streamEntriesDeleted: 0, jobsBusy: 0 };
    const bull = `${this.keys.bullPrefix}:`;
    let cursor = '0';
    do {
      const [next, batch] = await this.redis.scan(cursor, 'MATCH', `${this.keys.prefix}:*`, 'COUNT', 500);
      cursor = next;
      for (const key of batch) {
        if (namesTrace(key, matcher)) {
          // A key named after an erased event (a fallback thread) or a person's private chat goes whole.
          report.keysDeleted += await this.redis.unlink(key);
          continue;
        }
        const type = await this.redis.type(key);
        if (key.startsWith(bull) && type === 'hash' && /:[^:]+$/.test(key)) {
          await this.scrubJob(key, matcher, report);
          continue;
        }
        await this.scrubKey(key, type, matcher, report);
      }
    } while (cursor !== '0');
    return report;
  }

  private async scrubJob(key: string, matcher: TraceMatcher, report: ScrubReport): Promise<void> {
    const job = await this.redis.hgetall(key);
    const text = Object.values(job).join('\n');
    if (!job.data && !job.returnvalue) return this.scrubKey(key, 'hash', matcher, report);
    if (!matches(text, matcher)) return;
    const lock = await this.redis.exists(`${key}:lock`);
    if (lock) {
      report.jobsBusy += 1;
      return;
    }
    // The queue's own bookkeeping holds only the job id (not a trace); the hash with its data goes.
    await this.redis.unlink(key, `${key}:logs`);
    report.keysDeleted += 1;
  }

  private async scrubKey(key: string, type: string, matcher: TraceMatcher, report: ScrubReport): Promise<void> {
    switch (type) {
      case 'string': {
        const value = await this.redis.get(key);
        if (value !== null && matches(value, matcher)) report.keysDeleted += await this.redis.unlink(key);
        return;
      }
      case 'list': {
        const items = await this.redis.lrange(key, 0, -1);
        for (const item of new Set(items.filter((i) => matches(i, matcher)))) {
          report.elementsRemoved += await this.redis.lrem(key, 0, item);
        }
        return;
      }
      case 'hash': {
        const entries = await this.redis.hgetall(key);
        const fields = Object.entries(entries)
          .filter(([field, value]) => matches(field, matcher) || matches(value, matcher) || matcher.anywhere.has(field))
          .map(([field]) => field);
        if (fields.length > 0) report.elementsRemoved += await this.redis.hdel(key, ...fields);
        return;
      }
      case 'set': {
        const members = (await this.redis.smembers(key)).filter((m) => matches(m, matcher) || matcher.anywhere.has(m));
        if (members.length > 0) report.elementsRemoved += await this.redis.srem(key, ...members);
        return;
      }
      case 'zset': {
        const members = (await this.redis.zrange(key, 0, -1)).filter(
          (m) => matches(m, matcher) || matcher.anywhere.has(m),
        );
        if (members.length > 0) report.elementsRemoved += await this.redis.zrem(key, ...members);
        return;
      }
      case 'stream': {
        let start = '-';
        for (;;) {
          const entries = await this.redis.xrange(key, start, '+', 'COUNT', 500);
          const doomed = entries.filter(([, fields]) => matches(fields.join('\n'), matcher)).map(([id]) => id);
          if (doomed.length > 0) report.streamEntriesDeleted += await this.redis.xdel(key, ...doomed);
          if (entries.length < 500) return;
          start = `(${entries[entries.length - 1]![0]}`;
        }
      }
      default:
        return;
    }
  }
}
