import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

/** Buckets for durations that can take minutes (episodes, LLM calls). */
export const LONG_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600];
/** Buckets for short operations (handlers, sends, projection lag). */
export const SHORT_SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * One Prometheus registry per app. Metrics are looked up by name, so two modules asking for the same metric share
 * it instead of failing with "already registered".
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly collectors = new Map<string, Counter | Gauge | Histogram>();
  private readonly contributors: MetricsContributor[] = [];

  constructor(app: string, withDefaults = true) {
    this.registry.setDefaultLabels({ app });
    if (withDefaults) collectDefaultMetrics({ register: this.registry });
  }

  counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return this.getOrCreate(config.name, () => new Counter({ ...config, registers: [this.registry] })) as Counter<L>;
  }

  gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
    return this.getOrCreate(config.name, () => new Gauge({ ...config, registers: [this.registry] })) as Gauge<L>;
  }

  histogram<L extends string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
    return this.getOrCreate(
      config.name,
      () => new Histogram({ ...config, registers: [this.registry] }),
    ) as Histogram<L>;
  }

  /** Add text produced at scrape time (BullMQ's own Prometheus export, for instance). */
  contribute(contributor: MetricsContributor): void {
    this.contributors.push(contributor);
  }

  /** The whole exposition: the registry plus every contributor. A failing contributor is skipped, not fatal. */
  async scrape(): Promise<string> {
    const parts = [await this.registry.metrics()];
    for (const contributor of this.contributors) {
      try {
        parts.push(await contributor());
      } catch (error) {
        parts.push(`# contributor failed: ${(error as Error).message.replace(/\n/g, ' ')}`);
      }
    }
    return parts.filter((p) => p.length > 0).join('\n');
  }

  private getOrCreate(name: string, create: () => Counter | Gauge | Histogram): Counter | Gauge | Histogram {
    let collector = this.collectors.get(name);
    if (!collector) {
      collector = create();
      this.collectors.set(name, collector);
    }
    return collector;
  }
}

/** Extra exposition text produced at scrape time. */
export type MetricsContributor = () => Promise<string>;
