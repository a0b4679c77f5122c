import { Controller, Get, Inject, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Redis } from 'ioredis';
import { ShutdownState } from './shutdown-state.js';
import { HealthDetails } from './health-details.js';
import { REDIS } from './tokens.js';

/** Ready when Redis and Postgres answer and the process is not stopping. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly db: TypeOrmHealthIndicator,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly shutdown: ShutdownState,
    private readonly details: HealthDetails,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    if (this.shutdown.draining) {
      throw new ServiceUnavailableException({ status: 'shutting_down', info: {}, error: {}, details: {} });
    }
    return this.health.check([
      () =>
        this.indicators
          .check('redis')
          .attempt(async () => {
            await this.redis.ping();
          })
          .withTimeout(1500),
      () => this.db.pingCheck('postgres').withTimeout(1500),
      ...this.details.entries().map(
        ([name, contributor]) =>
          () =>
            this.indicators.check(name).up(contributor()),
      ),
    ]);
  }
}
