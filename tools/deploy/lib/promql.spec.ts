import { metricNames, seriesSelectors } from './promql.js';

describe('seriesSelectors', () => {
  it('finds metrics inside functions and aggregations, with their matchers', () => {
    const expr =
      'histogram_quantile(0.95, sum by (le, app) (rate(qunli_episode_duration_seconds_bucket{outcome!="failed"}[5m])))';
    expect(seriesSelectors(expr)).toEqual([
      {
        name: 'qunli_episode_duration_seconds_bucket',
        text: 'qunli_episode_duration_seconds_bucket{outcome!="failed"}',
      },
    ]);
  });

  it('skips grouping labels, keywords, ranges, offsets, numbers and strings', () => {
    const expr = `sum without (instance) (a_total offset 5m) / on (group) group_left (kind) b
      > bool 1e3 and label_replace(c{x="y}z"}, "dst", "$1", "src", "(.*)") unless d[10m:1m] or -Inf`;
    expect(metricNames(expr)).toEqual(['a_total', 'b', 'c', 'd']);
  });

  it('reads __name__ from a bare selector', () => {
    expect(metricNames('count({__name__=~"x|y", app="a"}) + count({__name__="up"})')).toEqual(['up']);
  });

  it('fails loudly on an unbalanced expression', () => {
    expect(() => seriesSelectors('sum(rate(x{a="b"[5m]))')).toThrow(/unbalanced/);
  });
});
