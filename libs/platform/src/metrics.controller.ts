import { Controller, Get, Header, Inject, Optional } from '@nestjs/common';
import { Metrics, METRICS_CONTRIBUTORS, type MetricsContributor } from './metrics.js';

@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: Metrics,
    @Optional() @Inject(METRICS_CONTRIBUTORS) private readonly contributors: MetricsContributor[] = [],
  ) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(): Promise<string> {
    const parts = [await this.metrics.registry.metrics()];
    for (const contributor of this.contributors) {
      parts.push(await contributor.contribute());
    }
    return parts.filter((p) => p.length > 0).join('\n');
  }
}
