import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { envelopeErrors, type EventEnvelope, type Keyspace } from '@app/contracts';
import { commitArguments, COMMIT_SCRIPT } from './commit.script.js';
import type { BatchEntry, BatchHandler } from './consumer-types.js';
import { entryFields } from './event-log.js';
import { KeyedSerial } from './keyed-serial.js';
import type { BusMetrics } from './bus-metrics.js';
import { StreamContext } from './stream-context.js';
import { isTransientError } from './transient-error.js';

/** One consumer name per partition stream: the lease guarantees a single reader, so the name can be fixed and a
 * new owner re-reads exactly the previous owner's unacknowledged entries. */
export const CONSUMER = 'owner';

/** Processed event ids kept per partition and group to recognise duplicates. */
const INBOX_SIZE = 20_000;

export type Dispatch =
  | {
      mode: 'each';
      handles(kind: string): boolean;
      handle(event: EventEnvelope, ctx: StreamContext): Promise<void>;
    }
  | { mode: 'batch'; handler: BatchHandler };

export interface ReaderSettings {
  maxDeliveries: number;
  claimIdleMs: number;
  concurrency: number;
  readCount: number;
  blockMs: number;
}

export interface ReaderLog {
  warn(message: string, context?: Record<string, unknown>): void;
  error(message: string, context?: Record<string, unknown>): void;
}

interface RawEntry {
  id: string;
  fields: string[] | null;
  deliveries: number;
}

type Parsed = { ok: true; entry: RawEntry; event: EventEnvelope } | { ok: false; entry: RawEntry; reason: string };

type XReadReply = [string, [string, string[] | null][]][] | null;

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}

/**
 * Reads one partition stream for one consumer group while this process holds the partition's lease: first its
 * own pending entries (a restart or a takeover resumes where the last owner stopped), then new ones. Entries are
 * validated; invalid ones go straight to the dead-letter stream. Handlers that fail are retried with backoff;
 * after `maxDeliveries` non-transient failures the entry is dead-lettered and acknowledged, so one poison event
 * never stalls its group. A janitor reclaims entries left idle longer than `claimIdleMs` (XAUTOCLAIM).
 */
export class PartitionReader {
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private janitorTimer: NodeJS.Timeout | undefined;
  private janitorRun: Promise<void> = Promise.resolve();
  private readonly inFlight = new Set<string>();
  private readonly retryAt = new Map<string, number>();
  private readonly serial: KeyedSerial;
  private readonly stream: string;
  private readonly deadLetters: string;
  private readonly inbox: string;
  private readonly failures: string;

  constructor(
    private readonly redis: Redis,
    private readonly blocking: Redis,
    private readonly keys: Keyspace,
    private readonly group: string,
    readonly partition: number,
    private readonly settings: ReaderSettings,
    private readonly dispatch: Dispatch,
    private readonly metrics: BusMetrics,
    private readonly log: ReaderLog,
  ) {
    this.stream = keys.stream(partition);
    this.deadLetters = keys.deadLetters(partition);
    this.inbox = keys.inbox(partition, group);
    this.failures = `${this.inbox}:failures`;
    this.serial = new KeyedSerial((error) =>
      this.log.error('stream task failed outside its handler', { group, partition, error: describe(error) }),
    );
  }

  async start(): Promise<void> {
    await this.ensureGroup();
    this.running = true;
    this.loop = this.run();
  }

  /** Batch mode retries in place and never leaves an entry behind, so only per-event mode needs a janitor. It
   * starts after the pending entries were re-read, so it never races the resume for the same entries. */
  private startJanitor(): void {
    if (this.dispatch.mode !== 'each' || !this.running) return;
    const every = Math.max(50, Math.min(1000, Math.floor(this.settings.claimIdleMs / 4)));
    this.janitorTimer = setInterval(() => {
      this.janitorRun = this.janitorRun.then(() => this.janitor()).catch((error: unknown) => this.fault(error));
    }, every);
  }

  /** Stop reading; wait for handlers in flight. Unacknowledged entries stay pending for the next owner. */
  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.janitorTimer);
    await this.loop;
    await this.janitorRun;
    await this.serial.idle();
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', this.stream, this.group, '0', 'MKSTREAM');
    } catch (error) {
      if (!describe(error).includes('BUSYGROUP')) throw error;
    }
  }

  private fault(error: unknown): void {
    this.log.error('stream reader error', { group: this.group, partition: this.partition, error: describe(error) });
  }

  private async run(): Promise<void> {
    await this.resumePending();
    this.startJanitor();
    while (this.running) {
      try {
        if (this.dispatch.mode === 'each') await this.serial.belowLimit(this.settings.concurrency);
        if (!this.running) break;
        const reply = (await this.blocking.xreadgroup(
          'GROUP',
          this.group,
          CONSUMER,
          'COUNT',
          this.settings.readCount,
          'BLOCK',
          this.settings.blockMs,
          'STREAMS',
          this.stream,
          '>',
        )) as XReadReply;
        const entries = this.entriesOf(reply, () => 1);
        if (entries.length > 0) await this.handle(entries);
      } catch (error) {
        if (!this.running) break;
        if (describe(error).includes('NOGROUP')) await this.ensureGroup().catch((e: unknown) => this.fault(e));
        else this.fault(error);
        await sleep(500);
      }
    }
  }

  /** Re-read entries delivered to this partition's consumer but never acknowledged, oldest first. */
  private async resumePending(): Promise<void> {
    let cursor = '0';
    while (this.running) {
      try {
        const reply = (await this.redis.xreadgroup(
          'GROUP',
          this.group,
          CONSUMER,
          'COUNT',
          this.settings.readCount,
          'STREAMS',
          this.stream,
          cursor,
        )) as XReadReply;
        const raw = reply?.[0]?.[1] ?? [];
        if (raw.length === 0) return;
        const counts = await this.deliveryCounts(raw[0]![0], raw[raw.length - 1]![0]);
        await this.handle(this.entriesOf(reply, (id) => counts.get(id) ?? 1));
        cursor = raw[raw.length - 1]![0];
      } catch (error) {
        if (!this.running) return;
        this.fault(error);
        await sleep(500);
      }
    }
  }

  private entriesOf(reply: XReadReply, deliveries: (id: string) => number): RawEntry[] {
    return (reply?.[0]?.[1] ?? []).map(([id, fields]) => ({ id, fields, deliveries: deliveries(id) }));
  }

  private async deliveryCounts(from: string, to: string): Promise<Map<string, number>> {
    const rows = (await this.redis.xpending(this.stream, this.group, from, to, 10_000, CONSUMER)) as [
      string,
      string,
      number,
      number,
    ][];
    return new Map(rows.map(([id, , , count]) => [id, count]));
  }

  private parse(entry: RawEntry): Parsed {
    if (!entry.fields) return { ok: false, entry, reason: 'entry_deleted' };
    const index = entry.fields.indexOf('e');
    const json = index >= 0 ? entry.fields[index + 1] : undefined;
    if (json === undefined) return { ok: false, entry, reason: 'missing_envelope' };
    let plain: unknown;
    try {
      plain = JSON.parse(json);
    } catch {
      return { ok: false, entry, reason: 'bad_json' };
    }
    const errors = envelopeErrors(plain);
    if (errors.length > 0) {
      return {
        ok: false,
        entry,
        reason: `invalid_envelope: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`,
      };
    }
    return { ok: true, entry, event: plain as EventEnvelope };
  }

  private async handle(all: RawEntry[]): Promise<void> {
    const entries = await this.skipUnhandled(all);
    const parsed = entries.map((entry) => this.parse(entry));
    const valid: { entry: RawEntry; event: EventEnvelope }[] = [];
    for (const item of parsed) {
      if (item.ok) valid.push(item);
      else if (item.entry.fields === null) await this.dropDeleted(item.entry);
      else await this.deadLetter(item.entry, item.reason.split(':')[0]!, item.reason);
    }
    if (this.dispatch.mode === 'batch') {
      await this.handleBatch(this.dispatch.handler, valid);
      return;
    }
    for (const item of valid) {
      this.inFlight.add(item.entry.id);
      this.serial.run(item.event.groupId ?? '', () => this.handleOne(item.entry, item.event));
    }
  }

  /**
   * Acknowledge, without parsing or validating, entries whose kind (the `k` field) no handler of this group wants:
   * most of the log is of no interest to most groups. Entries without a readable kind go through validation.
   */
  private async skipUnhandled(entries: RawEntry[]): Promise<RawEntry[]> {
    if (this.dispatch.mode !== 'each') return entries;
    const dispatch = this.dispatch;
    const wanted: RawEntry[] = [];
    const skipped: { id: string; kind: string }[] = [];
    for (const entry of entries) {
      const kind = entry.fields?.[0] === 'k' ? entry.fields[1] : undefined;
      if (kind !== undefined && !dispatch.handles(kind)) skipped.push({ id: entry.id, kind });
      else wanted.push(entry);
    }
    if (skipped.length > 0) {
      await this.ackAll(skipped.map((s) => s.id));
      for (const { kind } of skipped) this.metrics.entries.inc({ group: this.group, kind, outcome: 'skipped' });
    }
    return wanted;
  }

  private async dropDeleted(entry: RawEntry): Promise<void> {
    this.log.warn('pending entry was trimmed before it was handled', {
      group: this.group,
      partition: this.partition,
      entryId: entry.id,
    });
    await this.redis.xack(this.stream, this.group, entry.id);
  }

  private async handleOne(entry: RawEntry, event: EventEnvelope): Promise<void> {
    const dispatch = this.dispatch as Extract<Dispatch, { mode: 'each' }>;
    const started = performance.now();
    try {
      if (!dispatch.handles(event.kind)) {
        await this.redis.xack(this.stream, this.group, entry.id);
        this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'skipped' });
        return;
      }
      if ((await this.redis.zscore(this.inbox, event.id)) !== null) {
        await this.redis.xack(this.stream, this.group, entry.id);
        this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'duplicate' });
        return;
      }
      const ctx = new StreamContext(this.group, this.partition, entry.id, entry.deliveries, this.keys);
      await dispatch.handle(event, ctx);
      await this.commit(entry, event, ctx);
      this.forget(entry.id);
      this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'handled' });
      this.metrics.handlerSeconds.observe({ group: this.group }, (performance.now() - started) / 1000);
    } catch (error) {
      await this.failed(entry, event, error);
    } finally {
      this.inFlight.delete(entry.id);
    }
  }

  private async commit(entry: RawEntry, event: EventEnvelope, ctx: StreamContext): Promise<void> {
    const here: EventEnvelope[] = [];
    const elsewhere: EventEnvelope[] = [];
    for (const published of ctx.published) {
      const errors = envelopeErrors(published);
      if (errors.length > 0) {
        throw new Error(
          `handler published an invalid ${published.kind} event: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`,
        );
      }
      (this.keys.partitionOf(published.groupId) === this.partition ? here : elsewhere).push(published);
    }
    for (const other of elsewhere) {
      await this.redis.xadd(this.keys.stream(this.keys.partitionOf(other.groupId)), '*', ...entryFields(other));
    }
    const { keys, argv } = commitArguments({
      stream: this.stream,
      inbox: this.inbox,
      group: this.group,
      entryId: entry.id,
      eventId: event.id,
      nowMs: Date.now(),
      events: here,
      commands: ctx.staged,
    });
    await this.redis.eval(COMMIT_SCRIPT, keys.length, ...keys, ...argv);
    for (const published of ctx.published) this.metrics.published(published);
  }

  /** A handler failed: back off and retry, or dead-letter after too many non-transient failures. */
  private async failed(entry: RawEntry, event: EventEnvelope, error: unknown): Promise<void> {
    const transient = isTransientError(error);
    this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: transient ? 'unavailable' : 'failed' });
    const failures = transient ? 0 : await this.redis.hincrby(this.failures, entry.id, 1);
    if (!transient && failures >= this.settings.maxDeliveries) {
      await this.deadLetter(entry, 'max_deliveries', describe(error), event.kind);
      return;
    }
    this.retryAt.set(entry.id, Date.now() + this.backoff(Math.max(1, failures)));
    this.log.warn('handler failed; will retry', {
      group: this.group,
      partition: this.partition,
      entryId: entry.id,
      kind: event.kind,
      eventId: event.id,
      failures,
      transient,
      error: describe(error),
    });
  }

  private backoff(failures: number): number {
    return Math.min(this.settings.claimIdleMs, 250 * 2 ** (failures - 1));
  }

  private forget(id: string): void {
    this.retryAt.delete(id);
    void this.redis.hdel(this.failures, id).catch((error: unknown) => this.fault(error));
  }

  /**
   * Batches keep the partition in order: on failure the batch is retried entry by entry; a failing entry is
   * retried in place (the partition waits) until it succeeds or, after `maxDeliveries` non-transient failures,
   * goes to the dead-letter stream — then the rest continues.
   */
  private async handleBatch(handler: BatchHandler, items: { entry: RawEntry; event: EventEnvelope }[]): Promise<void> {
    if (items.length === 0) return;
    const toBatch = (list: typeof items): BatchEntry[] =>
      list.map(({ entry, event }) => ({
        partition: this.partition,
        entryId: entry.id,
        event,
        deliveries: entry.deliveries,
      }));
    items.forEach(({ entry }) => this.inFlight.add(entry.id));
    try {
      try {
        await handler.handleBatch(toBatch(items));
        await this.ackAll(items.map(({ entry }) => entry.id));
        items.forEach(({ entry, event }) => {
          this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'handled' });
          this.retryAt.delete(entry.id);
        });
        return;
      } catch (error) {
        this.log.warn('batch failed; retrying entry by entry', {
          group: this.group,
          partition: this.partition,
          size: items.length,
          error: describe(error),
        });
      }
      for (const item of items) {
        for (let attempt = 1; ; attempt++) {
          try {
            await handler.handleBatch(toBatch([item]));
            await this.ackAll([item.entry.id]);
            this.forget(item.entry.id);
            this.metrics.entries.inc({ group: this.group, kind: item.event.kind, outcome: 'handled' });
            break;
          } catch (error) {
            const transient = isTransientError(error);
            this.metrics.entries.inc({
              group: this.group,
              kind: item.event.kind,
              outcome: transient ? 'unavailable' : 'failed',
            });
            const failures = transient ? 0 : await this.redis.hincrby(this.failures, item.entry.id, 1);
            if (!transient && failures >= this.settings.maxDeliveries) {
              await this.deadLetter(item.entry, 'max_deliveries', describe(error), item.event.kind);
              break;
            }
            if (!this.running) return;
            await sleep(this.backoff(transient ? Math.min(attempt, 8) : failures));
          }
        }
      }
    } finally {
      items.forEach(({ entry }) => this.inFlight.delete(entry.id));
    }
  }

  private async ackAll(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.redis.xack(this.stream, this.group, ...ids);
  }

  private async deadLetter(entry: RawEntry, reason: string, error: string, kind = 'unknown'): Promise<void> {
    const fields = entry.fields ?? [];
    const raw = fields[fields.indexOf('e') + 1] ?? '';
    const results = await this.redis
      .multi()
      .xadd(
        this.deadLetters,
        '*',
        'group',
        this.group,
        'entry',
        entry.id,
        'partition',
        this.partition,
        'reason',
        reason,
        'error',
        error.slice(0, 2000),
        'k',
        kind,
        'e',
        raw,
        'at',
        new Date().toISOString(),
      )
      .xack(this.stream, this.group, entry.id)
      .hdel(this.failures, entry.id)
      .exec();
    const failure = results?.find(([e]) => e)?.[0];
    if (failure) throw failure;
    this.retryAt.delete(entry.id);
    this.metrics.deadLetters.inc({ group: this.group, reason });
    this.log.error('entry dead-lettered', {
      group: this.group,
      partition: this.partition,
      entryId: entry.id,
      kind,
      reason,
      error,
    });
  }

  /**
   * Retries entries whose handler failed here once their backoff is over, reclaims entries idle for longer than
   * `claimIdleMs` (a handler that died without acknowledging), and trims the inbox.
   */
  private async janitor(): Promise<void> {
    if (!this.running) return;
    const now = Date.now();
    const due = [...this.retryAt].filter(([id, at]) => at <= now && !this.inFlight.has(id)).map(([id]) => id);
    if (due.length > 0) {
      due.forEach((id) => this.retryAt.delete(id));
      const claimed = (await this.redis.xclaim(this.stream, this.group, CONSUMER, 0, ...due)) as [
        string,
        string[] | null,
      ][];
      await this.redeliver(claimed);
    }
    const [, claimed, deleted] = (await this.redis.xautoclaim(
      this.stream,
      this.group,
      CONSUMER,
      this.settings.claimIdleMs,
      '0-0',
      'COUNT',
      100,
    )) as [string, [string, string[] | null][], string[]];
    const idle = claimed.filter(([id]) => !this.inFlight.has(id) && !this.retryAt.has(id));
    for (const id of deleted ?? []) {
      this.log.warn('pending entry was trimmed before it was handled', { group: this.group, entryId: id });
    }
    await this.redeliver(idle);
    await this.redis.zremrangebyrank(this.inbox, 0, -(INBOX_SIZE + 1));
  }

  private async redeliver(claimed: [string, string[] | null][]): Promise<void> {
    if (claimed.length === 0) return;
    const ids = claimed.map(([id]) => id).sort(compareIds);
    const counts = await this.deliveryCounts(ids[0]!, ids[ids.length - 1]!);
    const entries = claimed
      .map(([id, fields]) => ({ id, fields, deliveries: counts.get(id) ?? 1 }))
      .sort((a, b) => compareIds(a.id, b.id));
    await this.handle(entries);
  }
}

/** Order stream ids (`ms-seq`) numerically. */
export function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}
