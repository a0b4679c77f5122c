import { BullModule, getQueueToken } from '@nestjs/bullmq';
import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Keyspace, type QueueName } from '@app/contracts';
import { QunliConfig } from './config.js';
import { Metrics } from './metrics.js';
import { QueueMetrics } from './queue-metrics.js';
import { createRedis } from './redis.js';
import { APP_NAME } from './tokens.js';

/**
 * BullMQ's command connection. In native ESM BullMQ cannot build its own ioredis client, so it is handed this one
 * (its workers duplicate it for their blocking reads). BullMQ never closes a connection it was handed, so this
 * provider does, at shutdown, after workers stopped in `beforeApplicationShutdown`.
 */
@Injectable()
export class BullConnection implements OnApplicationShutdown {
  readonly redis: Redis;

  constructor(config: QunliConfig, @Inject(APP_NAME) app: string) {
    this.redis = createRedis(config.REDIS_URL, `qunli-${app}-bullmq`, { enableAutoPipelining: false });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

@Module({ providers: [BullConnection], exports: [BullConnection] })
class BullConnectionModule {}

/**
 * The BullMQ queues an app uses, on the deployment's key prefix (`Keyspace.bullPrefix`), each exported on the
 * app's /metrics (`QueueMetrics`). Requires `PlatformModule` and `EventBusModule` (for `Keyspace`).
 */
@Module({})
export class QueuesModule {
  static forRoot(...queues: QueueName[]): DynamicModule {
    return {
      module: QueuesModule,
      imports: [
        BullModule.forRootAsync({
          imports: [BullConnectionModule],
          inject: [BullConnection, Keyspace],
          useFactory: (connection: BullConnection, keys: Keyspace) => ({
            connection: connection.redis,
            prefix: keys.bullPrefix,
          }),
        }),
        BullModule.registerQueue(...queues.map((name) => ({ name }))),
        BullConnectionModule,
      ],
      providers: [
        {
          provide: QueueMetrics,
          inject: [Metrics, APP_NAME, BullConnection, ...queues.map((name) => getQueueToken(name))],
          useFactory: (metrics: Metrics, app: string, connection: BullConnection, ...instances: Queue[]) =>
            new QueueMetrics(metrics, app, connection.redis, instances),
        },
      ],
      exports: [BullModule],
    };
  }
}
