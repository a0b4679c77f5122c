import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { envelopeErrors, PRIORITY, type EventEnvelope, type Keyspace } from '@app/contracts';
import { commitArguments, COMMIT_SCRIPT } from './commit.script.js';
import type { BatchEntry, BatchHandler } from './consumer-types.js';
import type { DeferredAcks } from './deferred-acks.js';
import { checkedEnvelopeErrors } from './envelope-check.js';
import { SEAL_FIELD, sealedFields, sealEnvelope, sealHolds, type SealedEntry } from './entry-seal.js';
import { GroupLanes, type LaneItem, type LaneOutcome } from './group-lanes.js';
import type { UrgencyGate } from './urgency-gate.js';
import { wakeConsumers, type StreamWakes } from './stream-wakes.js';
import type { BusMetrics } from './bus-metrics.js';
import { StreamContext } from './stream-context.js';
import { isTransientError } from './transient-error.js';
import { unlessAborted } from './unless-aborted.js';
import { validatedEntries } from './validated-entries.js';

/** One consumer name per partition stream: the lease guarantees a single reader, so the name can be fixed and a
 * new owner re-reads exactly the previous owner's unacknowledged entries. */
export const CONSUMER = 'owner';

/** The longest a reader's janitor waits between two sweeps (real ms). */
export const JANITOR_MAX_EVERY_MS = 15_000;

/** Processed event ids kept per partition and group to recognise duplicates. */
export const INBOX_SIZE = 20_000;

export type Dispatch =
  | {
      mode: 'each';
      handles(kind: string): boolean;
      handle(event: EventEnvelope, ctx: StreamContext): Promise<void>;
      prefetch?(event: EventEnvelope, ctx: StreamContext): void;
      /** `ConsumerOptions.idempotent`: no inbox lookup before the handler. */
      idempotent?: boolean;
    }
  | { mode: 'batch'; handler: BatchHandler };

export interface ReaderSettings {
  maxDeliveries: number;
  claimIdleMs: number;
  /** Groups handled at once per partition (one slot per group, whatever its backlog). */
  concurrency: number;
  /** Extra slots for groups whose next event is urgent (priority 0: addressed to the bot). */
  urgentReserve: number;
  readCount: number;
  blockMs: number;
  /** Batch mode: after a read that was not full, how long to let entries gather before reading again. */
  lingerMs: number;
  /**
   * Per-event mode with `StreamWakes`: after a read that held nothing this group handles, rest this long before
   * reading again unless a writer wakes the partition (0: read again at once).
   */
  idleLingerMs: number;
  /** First retry delay of a failed handler; doubles per failure up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Entries held in memory per partition before reading pauses (backlogs beyond `laneBodies` are ids only). */
  maxHeld: number;
  /** Parsed entries kept per group; a longer backlog keeps only entry ids and re-reads the entry when its turn comes. */
  laneBodies: number;
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

/** One entry waiting in its group's lane. A spilled entry (long backlog) holds no body until its turn. */
interface HeldEntry extends LaneItem {
  entry: RawEntry;
  event: EventEnvelope | undefined;
  /** Transient failures so far (they do not count towards dead-lettering, only towards the backoff). */
  attempts: number;
  /** When an urgent entry was read (`performance.now()`), until its turn starts; then undefined. */
  urgentReadAt: number | undefined;
}

/** The commit script as an ioredis command: EVALSHA, with the script's text sent only when Redis lacks it. */
type CommittingRedis = Redis & {
  qunliCommit(numberOfKeys: number, ...args: (string | number | Buffer)[]): Promise<number>;
};

type XReadReply = [string, [string, string[] | null][]][] | null;

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}

/**
 * Reads one partition stream for one consumer group while this process holds the partition's lease: first its
 * own pending entries (a restart or a takeover resumes where the last owner stopped), then new ones. Entries are
 * validated; invalid ones go straight to the dead-letter stream.
 *
 * Per-event handlers run in `GroupLanes`: one chat group's events one at a time and in log order, different groups
 * in parallel, one slot per group however long its backlog (no head-of-line blocking), urgent groups first. A
 * failing handler is retried in place with backoff while its group's later events wait — a stateful consumer never
 * sees them out of order — and after `maxDeliveries` non-transient failures the entry is dead-lettered and the
 * group moves on, so a poison event stalls its group for at most the retry budget. A janitor reclaims entries left
 * idle that this reader does not hold (XPENDING IDLE + XCLAIM) and trims the inbox.
 */
export class PartitionReader {
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  /** Aborted by `stop()`, so a blocking read in flight is not waited for (`unlessAborted`). */
  private stopping = new AbortController();
  private janitorTimer: NodeJS.Timeout | undefined;
  private janitorRun: Promise<void> = Promise.resolve();
  private readonly batchInFlight = new Set<string>();
  private lastSweep = 0;
  /** Whether a commit of this reader added to the inbox since the janitor last trimmed it (true: trim at start). */
  private inboxGrew = true;
  private readonly lanes: GroupLanes<HeldEntry>;
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
    /** Where acknowledgements of skipped entries wait to be sent together; without it each read acks its own. */
    private readonly acks?: DeferredAcks,
    /** The process's gate: while urgent work waits anywhere in the process, ordinary lanes are held back. */
    gate?: UrgencyGate,
    /** Where a group that rests between reads (`idleLingerMs`) is woken. */
    private readonly wakes?: StreamWakes,
  ) {
    this.stream = keys.stream(partition);
    this.deadLetters = keys.deadLetters(partition);
    this.inbox = keys.inbox(partition, group);
    this.failures = `${this.inbox}:failures`;
    if (!('qunliCommit' in redis)) redis.defineCommand('qunliCommit', { lua: COMMIT_SCRIPT });
    this.lanes = new GroupLanes<HeldEntry>({
      concurrency: settings.concurrency,
      urgentReserve: settings.urgentReserve,
      run: (held) => this.runHeld(held),
      onError: (error, held) =>
        this.log.error('stream task failed outside its handler', {
          group,
          partition,
          entryId: held.id,
          error: describe(error),
        }),
      fallbackRetryMs: settings.retryBaseMs,
      ...(gate ? { gate } : {}),
    });
  }

  async start(): Promise<void> {
    await this.ensureGroup();
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  /**
   * Per-event mode runs its janitor on a timer, after the pending entries were re-read (so it never races the resume
   * for the same entries). Batch mode sweeps between batches instead (`sweepBatch`), never beside one.
   */
  private startJanitor(): void {
    if (this.dispatch.mode !== 'each' || !this.running) return;
    this.janitorTimer = setInterval(() => {
      this.janitorRun = this.janitorRun.then(() => this.janitor()).catch((error: unknown) => this.fault(error));
    }, this.janitorEveryMs());
  }

  /**
   * A quarter of the claim time, so an entry this reader lost is reclaimed within 1.25 × `claimIdleMs` of its
   * delivery; at most every 15 s (ADR 0036: once a second, the sweeps were a third of an idle scheduler's commands).
   */
  private janitorEveryMs(): number {
    return Math.max(50, Math.min(JANITOR_MAX_EVERY_MS, Math.floor(this.settings.claimIdleMs / 4)));
  }

  /**
   * Batch mode handles what it reads before it reads again, so an entry of its own left pending between batches
   * was delivered to a read whose reply never arrived: one a stop abandoned (a Redis restart while it blocked)
   * that ioredis sent again once it reconnected, after a new reader had started past it. Without this sweep such
   * entries would stay pending for ever, and the projector would never archive them.
   */
  private async sweepBatch(): Promise<void> {
    if (this.dispatch.mode !== 'batch' || Date.now() - this.lastSweep < this.janitorEveryMs()) return;
    this.lastSweep = Date.now();
    await this.janitor();
  }

  /** Stop reading; wait for handlers running now. Unacknowledged entries stay pending for the next owner. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    clearInterval(this.janitorTimer);
    const lanes = this.lanes.stop();
    await this.loop;
    await this.janitorRun;
    await lanes;
    await this.acks?.flush(this.stream).catch((error: unknown) => this.fault(error));
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
    const beats = this.dispatch.mode === 'batch' && this.settings.lingerMs > 0;
    // A lingering batch reader reads on the beat without blocking, and only a partition it found empty waits in a
    // blocking read (ADR 0047). Every other reader always blocks.
    let block = !beats;
    /** When a read last returned entries (`performance.now()`). */
    let lastEntriesAt = Number.NEGATIVE_INFINITY;
    while (this.running) {
      try {
        if (this.dispatch.mode === 'each') await this.lanes.belowSize(this.settings.maxHeld);
        else await this.sweepBatch();
        if (!this.running) break;
        const blocked = block;
        const read = this.readNew(this.settings.readCount, blocked);
        // A stop does not wait for the read: ioredis 5 never settles a command that was in flight when the
        // connection dropped if the connection is then closed while it reconnects (a Redis restart during a lease
        // loss), and a stop waiting for it would hold the lease heartbeat forever. Entries the abandoned read may
        // still deliver stay pending for the partition's next owner.
        read.catch(() => undefined);
        const reply = await unlessAborted(read, this.stopping.signal);
        if (!this.running) break;
        let entries = this.entriesOf(reply, () => 1);
        if (beats) {
          // What woke a blocking read of a partition that had entries a moment ago came between two beats: it waits
          // for the next one, with whatever comes meanwhile (ADR 0047). At a low rate nearly every read was such a
          // wake, and each, handed over at once, took a write of the handler's group commit of its own. The first
          // entry after a quiet spell goes at once, as before: it may be the start of a burst, whose first batch is
          // better small.
          const now = performance.now();
          const trickling = now - lastEntriesAt < this.settings.lingerMs * TRICKLE_BEATS;
          if (entries.length > 0) lastEntriesAt = now;
          if (trickling && blocked && entries.length > 0 && entries.length < this.settings.readCount) {
            await unlessAborted(sleep(untilNextBeat(performance.now(), this.settings.lingerMs)), this.stopping.signal);
            // What was read stays pending for whoever reads the partition next.
            if (!this.running) break;
            entries = entries.concat(await this.readMore(this.settings.readCount - entries.length));
          }
          block = entries.length === 0;
          if (entries.length === 0) continue;
        }
        const wanted = entries.length > 0 ? await this.handle(entries) : 0;
        // A batch consumer that got less than a full read waits for more to gather before it reads again: at a
        // low rate each read would otherwise return an entry or two, and every read is a wake-up, a round trip
        // and a transaction's worth of fixed cost, for each of the partitions. It waits until the next step of a
        // beat its process's readers share (ADR 0045), so the partitions' short reads come back together and
        // their batches share one write of the handler's group commit.
        if (beats && entries.length < this.settings.readCount) {
          await unlessAborted(sleep(untilNextBeat(performance.now(), this.settings.lingerMs)), this.stopping.signal);
        }
        // A group that wants a few rare kinds (outbound) would otherwise wake for every entry of the log only to
        // skip it: it rests until a writer of its kinds wakes the partition, or its rest is up.
        if (this.wakes && this.settings.idleLingerMs > 0 && entries.length > 0 && wanted === 0) {
          await this.wakes.rest(this.partition, this.settings.idleLingerMs, this.stopping.signal);
        }
      } catch (error) {
        if (!this.running) break;
        if (describe(error).includes('NOGROUP')) await this.ensureGroup().catch((e: unknown) => this.fault(e));
        else this.fault(error);
        await sleep(500);
      }
    }
  }

  /** New entries of the partition, up to `count`; `block`: wait up to `blockMs` for the first if there is none. */
  private readNew(count: number, block: boolean): Promise<XReadReply> {
    const { group, stream } = this;
    const read = block
      ? this.blocking.xreadgroup(
          'GROUP',
          group,
          CONSUMER,
          'COUNT',
          count,
          'BLOCK',
          this.settings.blockMs,
          'STREAMS',
          stream,
          '>',
        )
      : this.blocking.xreadgroup('GROUP', group, CONSUMER, 'COUNT', count, 'STREAMS', stream, '>');
    return read as Promise<XReadReply>;
  }

  /**
   * New entries, up to `count`, without blocking. A failed read returns none: what a held read got is handed over
   * anyway, and the entries this read may have been delivered are swept up as lost ones (`sweepBatch`).
   */
  private async readMore(count: number): Promise<RawEntry[]> {
    try {
      return this.entriesOf(await this.readNew(count, false), () => 1);
    } catch (error) {
      this.fault(error);
      return [];
    }
  }

  /** Re-read entries delivered to this partition's consumer but never acknowledged, oldest first. */
  private async resumePending(): Promise<void> {
    let cursor = '0';
    while (this.running) {
      try {
        if (this.dispatch.mode === 'each') await this.lanes.belowSize(this.settings.maxHeld);
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
    // Validated once, by its writer, at the trust boundary: a seal that holds over these bytes says so. Another
    // consumer group of this process that checked the same entry already has said so too (a lookup, not a hash).
    if (validatedEntries.has(this.stream, entry.id)) return { ok: true, entry, event: plain as EventEnvelope };
    if (sealHolds(json, fieldOf(entry.fields, SEAL_FIELD))) {
      validatedEntries.add(this.stream, entry.id);
      return { ok: true, entry, event: plain as EventEnvelope };
    }
    const errors = envelopeErrors(plain);
    if (errors.length > 0) {
      return {
        ok: false,
        entry,
        reason: `invalid_envelope: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`,
      };
    }
    validatedEntries.add(this.stream, entry.id);
    return { ok: true, entry, event: plain as EventEnvelope };
  }

  /** Parse one entry; an invalid one is dead-lettered (or, when trimmed away, dropped) and yields nothing. */
  private async validEvent(entry: RawEntry): Promise<EventEnvelope | undefined> {
    const item = this.parse(entry);
    if (item.ok) return item.event;
    if (item.entry.fields === null) await this.dropDeleted(item.entry);
    else await this.deadLetter(item.entry, item.reason.split(':')[0]!, item.reason);
    return undefined;
  }

  /** Handle a read's entries; resolves to how many were not skipped for their kind. */
  private async handle(all: RawEntry[]): Promise<number> {
    const entries = await this.skipUnhandled(all);
    if (this.dispatch.mode === 'batch') {
      const valid: { entry: RawEntry; event: EventEnvelope }[] = [];
      for (const entry of entries) {
        const event = await this.validEvent(entry);
        if (event) valid.push({ entry, event });
      }
      await this.handleBatch(this.dispatch.handler, valid);
      return entries.length;
    }
    for (const entry of entries) {
      if (this.lanes.has(entry.id)) continue;
      const event = await this.validEvent(entry);
      if (!event) continue;
      const key = event.groupId ?? '';
      const ahead = this.lanes.backlog(key);
      const spill = ahead >= this.settings.laneBodies;
      const urgent = event.priority === PRIORITY.direct;
      if (urgent) this.metrics.urgentAhead.observe({ group: this.group }, ahead);
      // A held entry keeps its parsed event, not the reply's strings as well: those were twice the size of the
      // parsed event, and a lane needs them only to dead-letter the entry, which re-reads them (`deadLetter`).
      this.lanes.push({
        id: entry.id,
        key,
        urgent,
        entry: { id: entry.id, fields: [], deliveries: entry.deliveries },
        event: spill ? undefined : event,
        attempts: 0,
        urgentReadAt: urgent ? performance.now() : undefined,
      });
    }
    return entries.length;
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
      const ids = skipped.map((s) => s.id);
      // A resting group (`idleLingerMs`) reads seldom, in large reads: it acknowledges what it skipped at once, before
      // it handles the read's wanted entries, so they never see the skipped ones pending (outbound's send-order
      // guard looks for earlier pending entries) and no deferral is needed to share the writes. The XACK is issued,
      // not awaited: the handling's commands follow it on the same connection, so Redis runs it before any of them,
      // and a send's way to the API does not wait a round trip for it. (Were they on another connection, the guard
      // would at worst wait one poll for it.)
      if (this.acks && this.settings.idleLingerMs === 0) this.acks.add(this.stream, ids);
      else if (this.settings.idleLingerMs > 0) this.ackAll(ids).catch((error: unknown) => this.fault(error));
      else await this.ackAll(ids);
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

  /** A held entry's turn: load a spilled body, then handle it. */
  private async runHeld(held: HeldEntry): Promise<LaneOutcome> {
    if (!held.event) {
      const [found] = (await this.redis.xrange(this.stream, held.id, held.id)) as [string, string[]][];
      const entry: RawEntry = { id: held.id, fields: found?.[1] ?? null, deliveries: held.entry.deliveries };
      const event = await this.validEvent(entry);
      if (!event) return { done: true };
      held.entry = entry;
      held.event = event;
    }
    return this.handleOne(held, held.event);
  }

  private async handleOne(held: HeldEntry, event: EventEnvelope): Promise<LaneOutcome> {
    const dispatch = this.dispatch as Extract<Dispatch, { mode: 'each' }>;
    const entry = held.entry;
    const started = performance.now();
    if (held.urgentReadAt !== undefined) {
      this.metrics.urgentWaitSeconds.observe({ group: this.group }, (started - held.urgentReadAt) / 1000);
      held.urgentReadAt = undefined;
    }
    try {
      if (!dispatch.handles(event.kind)) {
        await this.redis.xack(this.stream, this.group, entry.id);
        this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'skipped' });
        return { done: true };
      }
      const deliveries = entry.deliveries + held.attempts;
      const ctx = new StreamContext(this.group, this.partition, entry.id, deliveries, this.keys);
      const duplicate = dispatch.idempotent ? undefined : this.redis.zscore(this.inbox, event.id);
      // Reads the handler will need, in the same write as the inbox lookup.
      dispatch.prefetch?.(event, ctx);
      if (duplicate && (await duplicate) !== null) {
        await this.redis.xack(this.stream, this.group, entry.id);
        this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'duplicate' });
        return { done: true };
      }
      await dispatch.handle(event, ctx);
      await this.commit(entry, event, ctx);
      if (!ctx.applied && dispatch.idempotent) {
        // The commit found it in the inbox: a duplicate whose handler ran again, its staged effects not applied.
        this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'duplicate' });
        return { done: true };
      }
      await ctx.runAfterCommit((error) =>
        this.log.error('after-commit task failed', { group: this.group, entryId: entry.id, error: describe(error) }),
      );
      if (held.attempts > 0 || entry.deliveries > 1) this.forget(entry.id);
      this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'handled' });
      this.metrics.handlerSeconds.observe({ group: this.group }, (performance.now() - started) / 1000);
      return { done: true };
    } catch (error) {
      return this.failed(held, event, error);
    }
  }

  private async commit(entry: RawEntry, event: EventEnvelope, ctx: StreamContext): Promise<void> {
    const here: SealedEntry[] = [];
    const elsewhere: { partition: number; entry: SealedEntry }[] = [];
    for (const published of ctx.published) {
      const errors = checkedEnvelopeErrors(published);
      if (errors.length > 0) {
        throw new Error(
          `handler published an invalid ${published.kind} event: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`,
        );
      }
      const partition = this.keys.partitionOf(published.groupId);
      if (partition === this.partition) here.push(sealEnvelope(published));
      else elsewhere.push({ partition, entry: sealEnvelope(published) });
    }
    for (const other of elsewhere) {
      await this.redis.xadd(this.keys.stream(other.partition), '*', ...sealedFields(other.entry));
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
    ctx.applied = Number(await (this.redis as CommittingRedis).qunliCommit(keys.length, ...keys, ...argv)) === 1;
    if (ctx.applied) this.inboxGrew = true;
    for (const published of ctx.published) this.metrics.published(published);
    if (ctx.applied)
      void wakeConsumers(this.redis, this.keys, ctx.published).catch((error: unknown) => this.fault(error));
  }

  /**
   * A handler failed: retry in place after a backoff (the group's later events wait), or dead-letter after too
   * many non-transient failures. Transient failures (a dependency is down) never dead-letter.
   */
  private async failed(held: HeldEntry, event: EventEnvelope, error: unknown): Promise<LaneOutcome> {
    const entry = held.entry;
    const transient = isTransientError(error);
    this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: transient ? 'unavailable' : 'failed' });
    held.attempts++;
    let failures = 0;
    try {
      failures = transient ? 0 : await this.redis.hincrby(this.failures, entry.id, 1);
      if (!transient && failures >= this.settings.maxDeliveries) {
        await this.deadLetter(entry, 'max_deliveries', describe(error), event.kind);
        return { done: true };
      }
    } catch (redisError) {
      this.fault(redisError);
    }
    this.log.warn('handler failed; will retry in place', {
      group: this.group,
      partition: this.partition,
      entryId: entry.id,
      kind: event.kind,
      eventId: event.id,
      failures,
      transient,
      error: describe(error),
    });
    return { done: false, retryInMs: this.backoff(transient ? Math.min(held.attempts, 8) : Math.max(1, failures)) };
  }

  /** `retryBaseMs × 2^(n−1)`, at most `retryMaxMs`. */
  private backoff(failures: number): number {
    return Math.min(this.settings.retryMaxMs, this.settings.retryBaseMs * 2 ** (failures - 1));
  }

  private forget(id: string): void {
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
      list.map(({ entry, event }) => {
        const json = entry.fields ? fieldOf(entry.fields, 'e') : undefined;
        return {
          partition: this.partition,
          entryId: entry.id,
          event,
          ...(json !== undefined ? { json } : {}),
          deliveries: entry.deliveries,
        };
      });
    items.forEach(({ entry }) => this.batchInFlight.add(entry.id));
    try {
      try {
        await handler.handleBatch(toBatch(items));
        await this.ackAll(items.map(({ entry }) => entry.id));
        items.forEach(({ event }) => {
          this.metrics.entries.inc({ group: this.group, kind: event.kind, outcome: 'handled' });
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
      items.forEach(({ entry }) => this.batchInFlight.delete(entry.id));
    }
  }

  private async ackAll(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.redis.xack(this.stream, this.group, ...ids);
  }

  private async deadLetter(entry: RawEntry, reason: string, error: string, kind = 'unknown'): Promise<void> {
    const raw = fieldOf(await this.heldFields(entry), 'e') ?? '';
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

  /** An entry's fields: a held entry dropped them once parsed (`handle`), so they are read again from the stream. */
  private async heldFields(entry: RawEntry): Promise<string[]> {
    if (entry.fields === null || entry.fields.length > 0) return entry.fields ?? [];
    const [found] = (await this.redis.xrange(this.stream, entry.id, entry.id)) as [string, string[]][];
    return found?.[1] ?? [];
  }

  /**
   * Reclaims entries idle for longer than `claimIdleMs` that this reader does not hold (a handler lost without an
   * outcome, a read whose reply was lost), and trims the inbox. Entries the lanes (or the batch in flight) hold are
   * never claimed: they wait their turn, in order.
   */
  private async janitor(): Promise<void> {
    if (!this.running) return;
    const idle = (await this.redis.call(
      'XPENDING',
      this.stream,
      this.group,
      'IDLE',
      this.settings.claimIdleMs,
      '-',
      '+',
      100,
      CONSUMER,
    )) as [string, string, number, number][];
    const holds = (id: string) =>
      this.lanes.has(id) || this.batchInFlight.has(id) || (this.acks?.holds(this.stream, id) ?? false);
    const lost = idle.map(([id]) => id).filter((id) => !holds(id));
    if (lost.length > 0) {
      const claimed = (await this.redis.xclaim(this.stream, this.group, CONSUMER, 0, ...lost)) as [
        string,
        string[] | null,
      ][];
      const counts = new Map(idle.map(([id, , , count]) => [id, count]));
      const entries = claimed
        .filter(([id]) => !holds(id))
        .map(([id, fields]) => ({ id, fields, deliveries: (counts.get(id) ?? 1) + 1 }))
        .sort((a, b) => compareIds(a.id, b.id));
      if (entries.length > 0) {
        this.log.warn('reclaimed idle entries', {
          group: this.group,
          partition: this.partition,
          count: entries.length,
        });
        await this.handle(entries);
      }
    }
    // Only this reader's commits add to its inbox (a previous owner's are trimmed by the first sweep after start).
    if (this.inboxGrew) {
      this.inboxGrew = false;
      await this.redis.zremrangebyrank(this.inbox, 0, -(INBOX_SIZE + 1));
    }
  }
}

/**
 * A lingering batch reader whose partition had entries within this many beats holds what wakes its blocking read
 * until the next beat (ADR 0047); after a longer quiet spell it hands the first entries over at once.
 */
export const TRICKLE_BEATS = 5;

/**
 * How long a lingering batch reader waits: until the next multiple of `lingerMs` on the process's clock
 * (`performance.now()`), never less than a millisecond. Every reader of the process lingering for the same time reads
 * again at the same moment, wherever its last read fell; a reader that waited the whole `lingerMs` from its own
 * last read would keep the phase its first entry gave it, and sixteen partitions would read at sixteen moments.
 */
export function untilNextBeat(nowMs: number, lingerMs: number): number {
  return Math.max(1, lingerMs - (nowMs % lingerMs));
}

/** The value of a field of a stream entry (fields are name, value, name, value …). */
function fieldOf(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** Order stream ids (`ms-seq`) numerically. */
export function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}
