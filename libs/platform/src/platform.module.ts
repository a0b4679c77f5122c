import { Global, Inject, Module, type DynamicModule, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { Redis } from 'ioredis';
import { Clock } from './clock.js';
import { loadConfig, QunliConfig, type AppName } from './config.js';
import { HealthController } from './health.controller.js';
import { HealthDetails } from './health-details.js';
import { HeapSteward } from './heap-steward.js';
import { Metrics } from './metrics.js';
import { MetricsController } from './metrics.controller.js';
import { createRedis } from './redis.js';
import { ShutdownState } from './shutdown-state.js';
import { APP_NAME, REDIS } from './tokens.js';

export interface PlatformOptions {
  /** Use this configuration instead of reading the environment (tests). */
  config?: QunliConfig;
  /** Skip prom-client's default Node metrics (tests that build several apps in one process). */
  withoutDefaultMetrics?: boolean;
}

class RedisCloser implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}
  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/**
 * What every app has: validated config, the product clock, a Redis connection, a metrics registry,
 * `GET /health` and `GET /metrics`, and a heap steward (ADR 0035). The app must also import `PersistenceModule` (health pings Postgres).
 */
@Global()
@Module({})
export class PlatformModule {
  static forApp(app: AppName, options: PlatformOptions = {}): DynamicModule {
    const providers: Provider[] = [
      { provide: APP_NAME, useValue: app },
      { provide: QunliConfig, useFactory: () => options.config ?? loadConfig(app) },
      {
        provide: Clock,
        inject: [QunliConfig],
        useFactory: (c: QunliConfig) => new Clock(c.QUNLI_TIME_SCALE, c.timeEpochMs),
      },
      { provide: Metrics, useFactory: () => new Metrics(app, !options.withoutDefaultMetrics) },
      {
        provide: REDIS,
        inject: [QunliConfig],
        useFactory: (c: QunliConfig) => createRedis(c.REDIS_URL, `qunli-${app}`),
      },
      RedisCloser,
      ShutdownState,
      HealthDetails,
      HeapSteward,
    ];
    return {
      module: PlatformModule,
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController, MetricsController],
      providers,
      exports: [APP_NAME, QunliConfig, Clock, Metrics, REDIS, ShutdownState, HealthDetails],
    };
  }
}
