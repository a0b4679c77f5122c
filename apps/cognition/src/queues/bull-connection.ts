import { Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { createRedis, QunliConfig } from '@app/platform';

/**
 * BullMQ's command connection. In native ESM BullMQ cannot build its own ioredis client, so it is handed this one
 * (its workers duplicate it for their blocking reads). BullMQ never closes a connection it was handed, so this
 * provider does, at shutdown, after the worker stopped in `beforeApplicationShutdown`.
 */
@Injectable()
export class BullConnection implements OnApplicationShutdown {
  readonly redis: Redis;

  constructor(config: QunliConfig) {
    this.redis = createRedis(config.REDIS_URL, 'qunli-cognition-bullmq', { enableAutoPipelining: false });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

@Module({ providers: [BullConnection], exports: [BullConnection] })
export class BullConnectionModule {}
