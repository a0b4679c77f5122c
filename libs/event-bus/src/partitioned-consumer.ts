import type { Redis } from 'ioredis';
import type { Gauge } from 'prom-client';
import type { Keyspace } from '@app/contracts';
import { DeferredAcks } from './deferred-acks.js';
import { PartitionLeases } from './partition-leases.js';
import { PartitionReader, type Dispatch, type ReaderLog, type ReaderSettings } from './partition-reader.js';
import type { BusMetrics } from './bus-metrics.js';
import type { PartitionTask } from './consumer-types.js';
import type { UrgencyGate } from './urgency-gate.js';
import { StreamWakes } from './stream-wakes.js';

export interface PartitionedConsumerOptions {
  redis: Redis;
  keys: Keyspace;
  group: string;
  instanceId: string;
  leaseMs: number;
  settings: ReaderSettings;
  dispatch: Dispatch;
  /** Run while the partition is owned: started after its reader, stopped before it. */
  partitionTasks: PartitionTask[];
  metrics: BusMetrics;
  ownedGauge: Gauge<'group'>;
  log: ReaderLog;
  /** Shared by every consumer group of the process. */
  gate?: UrgencyGate;
}

/**
 * One consumer group's reading in one process: leases decide which partitions are ours, and each owned
 * partition gets a `PartitionReader` with its own blocking connection.
 */
export class PartitionedConsumer {
  private readonly readers = new Map<number, { reader: PartitionReader; connection: Redis }>();
  private readonly leases: PartitionLeases;
  private readonly acks: DeferredAcks;
  /** Only for a group that rests between reads (`idleLingerMs`). */
  private readonly wakes: StreamWakes | undefined;

  constructor(private readonly options: PartitionedConsumerOptions) {
    this.acks = new DeferredAcks(options.redis, options.group, (error) =>
      options.log.error('acknowledging skipped entries failed; will retry', {
        group: options.group,
        error: String(error),
      }),
    );
    this.wakes =
      options.settings.idleLingerMs > 0
        ? new StreamWakes(options.redis, options.keys.streamWakeChannel(options.group), (error) =>
            options.log.error('stream wake failed', { group: options.group, error: String(error) }),
          )
        : undefined;
    this.leases = new PartitionLeases(
      options.redis,
      options.keys,
      options.group,
      options.instanceId,
      options.leaseMs,
      { acquired: (p) => this.startReader(p), released: (p, lost) => this.stopReader(p, lost) },
      (error) => options.log.error('partition lease error', { group: options.group, error: String(error) }),
    );
  }

  async start(): Promise<void> {
    await this.wakes?.start();
    await this.leases.start();
  }

  async stop(): Promise<void> {
    await this.leases.stop();
    await this.wakes?.stop();
  }

  private async startReader(partition: number): Promise<void> {
    const { options } = this;
    const connection = options.redis.duplicate({ connectionName: `qunli-${options.group}-p${partition}` });
    const reader = new PartitionReader(
      options.redis,
      connection,
      options.keys,
      options.group,
      partition,
      options.settings,
      options.dispatch,
      options.metrics,
      options.log,
      this.acks,
      options.gate,
      this.wakes,
    );
    this.readers.set(partition, { reader, connection });
    await reader.start();
    for (const task of options.partitionTasks) await task.start(partition);
    options.ownedGauge.set({ group: options.group }, this.readers.size);
  }

  private async stopReader(partition: number, lost: boolean): Promise<void> {
    const running = this.readers.get(partition);
    if (!running) return;
    this.readers.delete(partition);
    if (lost) {
      this.options.log.warn('partition lease lost; stopping its reader', { group: this.options.group, partition });
    }
    for (const task of this.options.partitionTasks) {
      await task.stop(partition).catch((error: unknown) =>
        this.options.log.error('partition task did not stop cleanly', {
          group: this.options.group,
          partition,
          error: String(error),
        }),
      );
    }
    // stop() marks the reader stopped synchronously; closing its connection then ends a pending
    // XREADGROUP BLOCK at once instead of after its timeout.
    const stopping = running.reader.stop();
    running.connection.disconnect();
    await stopping;
    this.options.ownedGauge.set({ group: this.options.group }, this.readers.size);
  }
}
