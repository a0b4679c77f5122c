import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Gauge, Registry } from 'prom-client';
import { Keyspace } from '@app/contracts';
import { APP_NAME, Metrics, REDIS } from '@app/platform';

/** XINFO GROUPS reply as a flat field list per group. */
type GroupInfo = (string | number | null)[];

function field(info: GroupInfo, name: string): string | number | null {
  const index = info.indexOf(name);
  return index >= 0 ? (info[index + 1] ?? null) : null;
}

/**
 * Stream length, pending entries and lag per consumer group and partition, read from Redis at scrape time, so
 * Prometheus shows the log's backlog whichever app it scrapes.
 */
@Injectable()
export class StreamMetrics implements OnModuleInit {
  private readonly registry = new Registry();
  private readonly length = new Gauge({
    name: 'qunli_stream_length',
    help: 'Entries in the hot event stream of a partition',
    labelNames: ['partition'],
    registers: [this.registry],
  });
  private readonly pending = new Gauge({
    name: 'qunli_stream_pending',
    help: 'Entries delivered to a consumer group but not yet acknowledged',
    labelNames: ['group', 'partition'],
    registers: [this.registry],
  });
  private readonly lag = new Gauge({
    name: 'qunli_stream_lag',
    help: 'Entries not yet delivered to a consumer group',
    labelNames: ['group', 'partition'],
    registers: [this.registry],
  });
  private readonly dead = new Gauge({
    name: 'qunli_dead_letter_length',
    help: 'Entries in the dead-letter stream of a partition',
    labelNames: ['partition'],
    registers: [this.registry],
  });

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly metrics: Metrics,
    @Inject(APP_NAME) app: string,
  ) {
    this.registry.setDefaultLabels({ app });
  }

  onModuleInit(): void {
    this.metrics.contribute(() => this.scrape());
  }

  /** Never holds a scrape hostage: with Redis away the gauges are left out and /metrics still answers. */
  async scrape(): Promise<string> {
    if (this.redis.status !== 'ready') return `# stream gauges unavailable: redis ${this.redis.status}`;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve('# stream gauges unavailable: redis did not answer within 2 s'), 2000);
    });
    try {
      return await Promise.race([this.read(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async read(): Promise<string> {
    for (let p = 0; p < this.keys.partitions; p++) {
      const label = String(p);
      const [length, deadLength, groups] = await Promise.all([
        this.redis.xlen(this.keys.stream(p)),
        this.redis.xlen(this.keys.deadLetters(p)),
        this.redis.xinfo('GROUPS', this.keys.stream(p)).catch(() => []) as Promise<GroupInfo[]>,
      ]);
      this.length.set({ partition: label }, length);
      this.dead.set({ partition: label }, deadLength);
      for (const info of groups) {
        const group = String(field(info, 'name'));
        this.pending.set({ group, partition: label }, Number(field(info, 'pending') ?? 0));
        const lag = field(info, 'lag');
        if (lag !== null) this.lag.set({ group, partition: label }, Number(lag));
      }
    }
    return this.registry.metrics();
  }
}
