import type { EventEnvelope } from '@app/contracts';
import type { StreamContext } from './stream-context.js';

/** One stream entry handed to a batch handler. All entries of one call come from one partition, in log order. */
export interface BatchEntry {
  partition: number;
  /** Redis stream entry id (`1700000000000-0`). */
  entryId: string;
  event: EventEnvelope;
  /** The envelope's JSON exactly as the log holds it (`event` is its parse), when the reader has it. */
  json?: string;
  /** 1 on first delivery. */
  deliveries: number;
}

/**
 * A consumer that takes whole batches (the projector). It must be idempotent per event id: after a crash the
 * same entries come again. When it throws, the bus retries the entries one at a time, so one poison event ends
 * in the dead-letter stream while the rest of the batch goes through.
 */
export interface BatchHandler {
  handleBatch(entries: BatchEntry[]): Promise<void>;
}

/**
 * Work that belongs to a partition and must run only while this process owns it for the consumer group (the
 * scheduler's durable timers): started after the partition's reader, stopped before it when the lease goes.
 */
export interface PartitionTask {
  start(partition: number): Promise<void>;
  stop(partition: number): Promise<void>;
}

export interface ConsumerOptions {
  /** Groups handled at once per partition (one slot per group however long its backlog; one group in order). Default 32. */
  concurrency?: number;
  /** Extra slots for groups whose next event is urgent (a message addressed to the bot). Default 8. */
  urgentReserve?: number;
  /** Started and stopped with each partition this consumer owns. */
  partitionTasks?: PartitionTask[];
  /** Entries read per XREADGROUP. Default 100. */
  readCount?: number;
  /**
   * How long one XREADGROUP blocks waiting for entries. Default 5000 ms. A read returns as soon as an entry arrives
   * and a stopped reader's connection is closed at once, so this only sets how often an idle partition is asked
   * again (ADR 0036).
   */
  blockMs?: number;
  /**
   * Batch consumers: after a read that was not full, wait this long before reading again, so entries gather into
   * fewer, larger batches (each read of each partition is a wake-up and a round trip). Adds at most this much
   * delay. Default 0.
   */
  lingerMs?: number;
  /**
   * Per-event consumers that want only rare kinds, each of whose writers wakes the group (`WAKES` in the contracts):
   * after a read that held nothing the group handles, rest this long before reading again unless a writer wakes the
   * partition. Spares a read (a wake-up, a round trip, the parse of entries it skips) per entry of the log. Default 0.
   */
  idleLingerMs?: number;
  /**
   * Called for each entry in the same tick as the reader's duplicate check (the inbox lookup), before the handler:
   * reads it starts go to Redis in the same write as that lookup, so a handler whose reads it knows ahead saves a
   * round trip per event. It must only read (a duplicate's handler never runs, and what it read is dropped), put
   * what it started on `ctx.prefetched`, and never throw or leave a rejection unhandled.
   */
  prefetch?: (event: EventEnvelope, ctx: StreamContext) => void;
  /**
   * The handlers' direct effects (what they do themselves, not what they stage on the context) come out the same
   * when an event is handled twice. The reader then skips its inbox lookup before each handler — one round trip
   * less per event — and a duplicate's handler runs again; its staged commands and published events are still
   * applied once, by the commit's own inbox check. For handlers such as outbound's enqueue of a send, whose durable
   * effect is keyed by the event itself. Default false.
   */
  idempotent?: boolean;
}
