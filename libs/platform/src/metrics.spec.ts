import { mergeExpositions, Metrics } from './metrics.js';

describe('mergeExpositions', () => {
  const bullmq = (queue: string, waiting: number) =>
    [
      '# HELP bullmq_job_count Number of jobs in the queue by state',
      '# TYPE bullmq_job_count gauge',
      `bullmq_job_count{queue="${queue}", state="waiting", app="cognition"} ${waiting}`,
    ].join('\n');

  it('gives a metric family its HELP and TYPE once, with the samples of every part together', () => {
    const merged = mergeExpositions([bullmq('episodes', 3), '# TYPE other gauge\nother 1', bullmq('life-ticks', 0)]);
    expect(merged.split('\n')).toEqual([
      '# HELP bullmq_job_count Number of jobs in the queue by state',
      '# TYPE bullmq_job_count gauge',
      'bullmq_job_count{queue="episodes", state="waiting", app="cognition"} 3',
      'bullmq_job_count{queue="life-ticks", state="waiting", app="cognition"} 0',
      '# TYPE other gauge',
      'other 1',
      '',
    ]);
  });

  it('keeps the first value of a series exported twice (two modules exporting one queue)', () => {
    const merged = mergeExpositions([bullmq('episodes', 3), bullmq('episodes', 4)]);
    expect(merged.match(/^bullmq_job_count/gm)).toHaveLength(1);
    expect(merged).toContain('} 3');
  });

  it('keeps histogram series under their family and other comments at the end', () => {
    const histogram = [
      '# HELP d_seconds x',
      '# TYPE d_seconds histogram',
      'd_seconds_bucket{le="1"} 1',
      'd_seconds_bucket{le="+Inf"} 2',
      'd_seconds_sum 3',
      'd_seconds_count 2',
    ].join('\n');
    const merged = mergeExpositions([histogram, '# contributor failed: boom', '# TYPE e gauge\ne 1']);
    expect(merged.split('\n').slice(-2)).toEqual(['# contributor failed: boom', '']);
    expect(merged.indexOf('d_seconds_count')).toBeLessThan(merged.indexOf('# TYPE e'));
  });
});

describe('Metrics.scrape', () => {
  it('merges contributors into the registry output, skipping one that fails', async () => {
    const metrics = new Metrics('scheduler', false);
    metrics.counter({ name: 'qunli_test_total', help: 'a test counter' }).inc();
    metrics.contribute(async () => '# TYPE qunli_contributed gauge\nqunli_contributed{app="scheduler"} 2');
    metrics.contribute(async () => {
      throw new Error('redis away');
    });
    const text = await metrics.scrape();
    expect(text).toContain('qunli_test_total{app="scheduler"} 1');
    expect(text).toContain('qunli_contributed{app="scheduler"} 2');
    expect(text).toContain('# contributor failed: redis away');
  });

  it('exports the default Node metrics, event-loop lag included', async () => {
    const text = await new Metrics('cognition').scrape();
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds\{app="cognition"\} /m);
    expect(text).toMatch(/^process_resident_memory_bytes\{app="cognition"\} /m);
  });
});
