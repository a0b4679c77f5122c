import { Inject, Injectable, Logger, type INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { Metrics, QunliConfig, REDIS } from '@app/platform';
import { BusMetrics } from './bus-metrics.js';
import type { BatchHandler, ConsumerOptions } from './consumer-types.js';
import { PartitionedConsumer } from './partitioned-consumer.js';
import type { Dispatch, ReaderLog } from './partition-reader.js';
import { RedisStreamsServer } from './redis-streams.server.js';
import { UrgencyGate } from './urgency-gate.js';

/**
 * Ordinary lanes the whole process runs while urgent work (a message addressed to the bot, and the earlier events
 * of its group) is ready or running anywhere in it (ADR 0028). Enough to keep Redis pipelines full; few enough that
 * an urgent turn's round trips do not queue behind hundreds of ambient ones.
 */
const ORDINARY_LANES_WHILE_URGENT = 8;

/** Handle on a running consumer. */
export interface RunningConsumer {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** An idle partition's reader asks again this often (real ms; ADR 0036). */
export const DEFAULT_BLOCK_MS = 5000;

/**
 * Factory for the read side.
 * - `connect(app, group)` (or `connectStreamConsumer`): the app's `@EventPattern('message.direct')` handlers
 *   receive `(event, ctx: StreamContext)`. This is the only way to attach a stream server to an app: it always
 *   inherits the app's global filters, so `StreamErrorFilter` hands handlers' original errors to the reader (a
 *   transient Redis error is an outage, not a poison event). A strategy built elsewhere and passed to a bare
 *   `app.connectMicroservice` would get Nest's default RPC filter, which turns every error into "Internal server
 *   error" and lets a short Redis blip dead-letter good events.
 * - `batch(group, handler)`: a consumer that hands whole batches to one handler (the projector).
 * Both own partitions by lease, re-read their pending entries first, reclaim idle ones, dead-letter entries
 * after `QUNLI_MAX_DELIVERIES` failures and keep a per-group inbox.
 */
@Injectable()
export class StreamConsumers {
  private readonly busMetrics: BusMetrics;
  private readonly owned;
  private readonly gate = new UrgencyGate(ORDINARY_LANES_WHILE_URGENT);

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly config: QunliConfig,
    metrics: Metrics,
  ) {
    this.busMetrics = new BusMetrics(metrics);
    this.owned = metrics.gauge({
      name: 'qunli_partitions_owned',
      help: 'Event stream partitions this process reads for a consumer group',
      labelNames: ['group'],
    });
  }

  /** Attach this consumer group's stream server to `app` (call before `startAllMicroservices`). */
  connect(app: INestApplication, group: string, options: ConsumerOptions = {}): RedisStreamsServer {
    const strategy = this.server(group, options);
    app.connectMicroservice({ strategy }, { inheritAppConfig: true });
    return strategy;
  }

  private server(group: string, options: ConsumerOptions): RedisStreamsServer {
    return new RedisStreamsServer(group, (server) =>
      this.consumer(group, options, {
        mode: 'each',
        handles: (kind) => server.handles(kind),
        handle: (event, ctx) => server.dispatch(event, ctx),
        ...(options.prefetch ? { prefetch: options.prefetch } : {}),
        ...(options.idempotent ? { idempotent: true } : {}),
      }),
    );
  }

  batch(group: string, handler: BatchHandler, options: ConsumerOptions = {}): RunningConsumer {
    return this.consumer(group, options, { mode: 'batch', handler });
  }

  private consumer(group: string, options: ConsumerOptions, dispatch: Dispatch): PartitionedConsumer {
    const logger = new Logger(`stream:${group}`);
    const log: ReaderLog = {
      warn: (message, context) => logger.warn({ message, ...context }),
      error: (message, context) => logger.error({ message, ...context }),
    };
    return new PartitionedConsumer({
      redis: this.redis,
      keys: this.keys,
      group,
      instanceId: this.config.QUNLI_INSTANCE_ID,
      leaseMs: this.config.QUNLI_LEASE_MS,
      settings: {
        maxDeliveries: this.config.QUNLI_MAX_DELIVERIES,
        claimIdleMs: this.config.QUNLI_CLAIM_IDLE_MS,
        concurrency: options.concurrency ?? 32,
        urgentReserve: options.urgentReserve ?? 8,
        readCount: options.readCount ?? 100,
        blockMs: options.blockMs ?? DEFAULT_BLOCK_MS,
        lingerMs: options.lingerMs ?? 0,
        idleLingerMs: options.idleLingerMs ?? 0,
        retryBaseMs: this.config.QUNLI_RETRY_BASE_MS,
        retryMaxMs: this.config.QUNLI_RETRY_MAX_MS,
        maxHeld: 20_000,
        laneBodies: 64,
      },
      partitionTasks: options.partitionTasks ?? [],
      dispatch,
      metrics: this.busMetrics,
      ownedGauge: this.owned,
      log,
      gate: this.gate,
    });
  }
}

/**
 * Attach a consumer group's stream server to an app (call before `startAllMicroservices`); the same as
 * `app.get(StreamConsumers).connect(app, group)`. The microservice inherits the app's global filters, so
 * handlers' original errors reach the reader (see `StreamErrorFilter`).
 */
export function connectStreamConsumer(
  app: INestApplication,
  group: string,
  options: ConsumerOptions = {},
): RedisStreamsServer {
  return app.get(StreamConsumers).connect(app, group, options);
}
