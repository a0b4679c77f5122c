import type { EventEnvelope } from '@app/contracts';

/** One stream entry handed to a batch handler. All entries of one call come from one partition, in log order. */
export interface BatchEntry {
  partition: number;
  /** Redis stream entry id (`1700000000000-0`). */
  entryId: string;
  event: EventEnvelope;
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

export interface ConsumerOptions {
  /** Entries handled at once per partition (different groups in parallel, one group in order). Default 32. */
  concurrency?: number;
  /** Entries read per XREADGROUP. Default 100. */
  readCount?: number;
  /** How long one XREADGROUP blocks waiting for entries. Default 1000 ms. */
  blockMs?: number;
}
