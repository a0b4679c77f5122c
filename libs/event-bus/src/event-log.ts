import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, ValidationFailed, type EventEnvelope } from '@app/contracts';
import { Metrics, REDIS } from '@app/platform';
import { BusMetrics } from './bus-metrics.js';
import { checkedEnvelopeErrors } from './envelope-check.js';
import { sealedFields, sealEnvelope, type SealedEntry } from './entry-seal.js';
import { passOverAfter, passOverArgument, passOverBefore } from './pass-over.js';
import { wakeConsumers } from './stream-wakes.js';

/**
 * Stream entry fields: `k` (kind, for people reading the stream with redis-cli) and `e` (the envelope JSON), with
 * no seal: readers validate such an entry in full. The bus's own writers store `sealedFields` instead.
 */
export function entryFields(event: EventEnvelope): [string, string, string, string] {
  return ['k', event.kind, 'e', JSON.stringify(event)];
}

// Appends unless the dedup key exists; both keys share the partition's hash tag. ARGV[6]: the groups to pass over
// (ADR 0044). Returns {1, entryId} when appended, {0, idOfFirst} when the key was already taken.
const APPEND_ONCE = `
local first = redis.call('GET', KEYS[1])
if first then return {0, first} end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
${passOverBefore('KEYS[2]', 'ARGV[6]')}
local id = redis.call('XADD', KEYS[2], '*', 'k', ARGV[3], 'e', ARGV[4], 'v', ARGV[5])
${passOverAfter('KEYS[2]', 'id', '1')}
return {1, id}
`;

export interface AppendOnceResult {
  appended: boolean;
  /** The stream entry id when appended; otherwise the event id that took the dedup key first. */
  id: string;
}

/**
 * The write side of the event log: validates every envelope and XADDs it to its group's partition stream.
 * Used by producers outside a stream handler (ingress, cognition, life-director); handlers publish through
 * their `StreamContext` so the append commits with their ack.
 */
@Injectable()
export class EventLog {
  private readonly metrics: BusMetrics;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    readonly keys: Keyspace,
    metrics: Metrics,
  ) {
    this.metrics = new BusMetrics(metrics);
    this.redis.defineCommand('qunliAppendOnce', { numberOfKeys: 2, lua: APPEND_ONCE });
  }

  /** Throws `ValidationFailed` naming every bad field. */
  validate(event: EventEnvelope): void {
    const errors = checkedEnvelopeErrors(event);
    if (errors.length > 0) throw new ValidationFailed(`${event.kind ?? 'event'} envelope`, errors);
  }

  /**
   * Validate (the one time this envelope is checked against the contracts), serialise once and seal: what every
   * writer stores, here or from a script of its own. Throws `ValidationFailed` naming every bad field.
   */
  sealed(event: EventEnvelope): SealedEntry {
    this.validate(event);
    return sealEnvelope(event);
  }

  /** Append one event; resolves to its stream entry id once Redis has it. */
  async append(event: EventEnvelope): Promise<string> {
    const entry = this.sealed(event);
    const id = await this.redis.xadd(
      this.keys.stream(this.keys.partitionOf(event.groupId)),
      '*',
      ...sealedFields(entry),
    );
    this.metrics.published(event);
    this.wake([event]);
    return id as string;
  }

  /** Wake the resting consumer groups these appended events are for (a lost wake only costs them latency). */
  private wake(events: readonly EventEnvelope[]): void {
    void wakeConsumers(this.redis, this.keys, events).catch(() => undefined);
  }

  /**
   * Append several events. Events of one partition go in one MULTI (all or none); `also` may add commands to
   * that MULTI (keys must carry the partition's hash tag).
   */
  async appendAll(
    events: EventEnvelope[],
    also?: (tx: ReturnType<Redis['multi']>, partition: number) => void,
  ): Promise<string[]> {
    const sealed = new Map(events.map((event) => [event, this.sealed(event)]));
    const byPartition = new Map<number, EventEnvelope[]>();
    for (const event of events) {
      const p = this.keys.partitionOf(event.groupId);
      byPartition.set(p, [...(byPartition.get(p) ?? []), event]);
    }
    const ids = new Map<EventEnvelope, string>();
    for (const [partition, group] of byPartition) {
      const tx = this.redis.multi();
      for (const event of group) tx.xadd(this.keys.stream(partition), '*', ...sealedFields(sealed.get(event)!));
      also?.(tx, partition);
      const results = await tx.exec();
      if (!results) throw new Error(`append to partition ${partition} was aborted`);
      group.forEach((event, i) => {
        const [error, id] = results[i]!;
        if (error) throw error;
        ids.set(event, id as string);
        this.metrics.published(event);
      });
    }
    this.wake(events);
    return events.map((e) => ids.get(e)!);
  }

  /**
   * Append unless `dedupKey` was used within `ttlSeconds` (an upstream retry of the same message). Atomic: the
   * key is taken only together with the append, so a crash never leaves a taken key without its event.
   */
  async appendOnce(event: EventEnvelope, dedupKey: string, ttlSeconds: number): Promise<AppendOnceResult> {
    const entry = this.sealed(event);
    const partition = this.keys.partitionOf(event.groupId);
    const [appended, id] = await (
      this.redis as unknown as {
        qunliAppendOnce(...args: (string | number | Buffer)[]): Promise<[number, string]>;
      }
    ).qunliAppendOnce(
      this.keys.dedup(partition, dedupKey),
      this.keys.stream(partition),
      event.id,
      ttlSeconds,
      entry.kind,
      entry.bytes,
      entry.seal,
      passOverArgument([entry.kind]),
    );
    if (appended === 1) {
      this.metrics.published(event);
      this.wake([event]);
    }
    return { appended: appended === 1, id };
  }
}
