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

  /**
   * The whole exposition: the registry plus every contributor, merged into one family per metric name (two
   * BullMQ queues both print `# TYPE bullmq_job_count`; Prometheus wants it once). A failing contributor is
   * skipped, not fatal.
   */
  async scrape(): Promise<string> {
    const parts = [await this.registry.metrics()];
    for (const contributor of this.contributors) {
      try {
        parts.push(await contributor());
      } catch (error) {
        parts.push(`# contributor failed: ${(error as Error).message.replace(/\n/g, ' ')}`);
      }
    }
    return mergeExpositions(parts);
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

interface MetricFamily {
  help: string | undefined;
  type: string | undefined;
  samples: Map<string, string>;
}

/** `name{labels} value [timestamp]` → `name{labels}`, the series' identity within one exposition. */
function seriesOf(sample: string): string {
  const close = sample.lastIndexOf('}');
  if (close >= 0) return sample.slice(0, close + 1);
  return sample.split(/\s+/, 1)[0]!;
}

function familyOfSample(series: string, families: Map<string, MetricFamily>): string {
  const name = series.split('{', 1)[0]!;
  if (families.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count', '_total', '_created']) {
    if (name.endsWith(suffix) && families.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
  }
  return name;
}

/**
 * Prometheus text expositions merged into one: each metric family once, with its HELP and TYPE once and its
 * samples together; a series given twice (two modules exporting the same queue) keeps its first value. Other
 * comment lines (a contributor's failure note) are kept at the end.
 */
export function mergeExpositions(parts: readonly string[]): string {
  const families = new Map<string, MetricFamily>();
  const notes: string[] = [];
  const family = (name: string): MetricFamily => {
    let found = families.get(name);
    if (!found) {
      found = { help: undefined, type: undefined, samples: new Map() };
      families.set(name, found);
    }
    return found;
  };
  for (const part of parts) {
    for (const raw of part.split('\n')) {
      const line = raw.trim();
      if (line === '') continue;
      const meta = /^#\s+(HELP|TYPE)\s+(\S+)\s*(.*)$/.exec(line);
      if (meta) {
        const target = family(meta[2]!);
        if (meta[1] === 'HELP') target.help ??= meta[3];
        else target.type ??= meta[3];
        continue;
      }
      if (line.startsWith('#')) {
        notes.push(line);
        continue;
      }
      const series = seriesOf(line);
      const samples = family(familyOfSample(series, families)).samples;
      if (!samples.has(series)) samples.set(series, line);
    }
  }
  const lines: string[] = [];
  for (const [name, { help, type, samples }] of families) {
    if (samples.size === 0 && help === undefined && type === undefined) continue;
    if (help !== undefined) lines.push(`# HELP ${name} ${help}`);
    if (type !== undefined) lines.push(`# TYPE ${name} ${type}`);
    lines.push(...samples.values());
  }
  lines.push(...notes);
  return `${lines.join('\n')}\n`;
}
