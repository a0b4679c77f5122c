/**
 * The observability tier: the five apps as processes, a real Prometheus (Debian's package) scraping them every
 * second with the repository's own rule files loaded, and some traffic (addressed and ambient messages, a rejected
 * post). Then everything an operator would look at is evaluated through Prometheus's HTTP API: each Grafana panel's
 * PromQL must return at least one series, each rule must load and evaluate, each metric a rule names must be one
 * the apps really export, and so must the autoscaler's query. The checks read the dashboards and rule files, so a
 * later panel or rule is checked without touching this file.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse, stringify } from 'yaml';
import {
  dashboardQueries,
  REPO,
  RULE_FILES,
  ruleEntries,
  type PanelQuery,
} from '../../tools/deploy/lib/observability-files.js';
import { metricNames } from '../../tools/deploy/lib/promql.js';
import { autoscalerQueries } from '../../tools/deploy/lib/k8s-manifests.js';
import { ALL_APPS, QunliStack } from '../support/stack.js';
import { assertPrometheusInstalled, PrometheusServer, promtool } from '../support/prometheus.js';

const GROUPS = ['700001', '700002'];

describe('observability: dashboards, rules and the autoscaler signal against a real Prometheus', () => {
  const stack = new QunliStack({ llm: { replyText: () => '收到～' } });
  let prometheus: PrometheusServer;

  beforeAll(async () => {
    assertPrometheusInstalled();
    await stack.start();
    prometheus = new PrometheusServer(
      join(tmpdir(), `qunli-prometheus-${stack.prefix}`),
      ALL_APPS.map((app) => ({ job: app, address: `127.0.0.1:${stack.app(app).port}` })),
      RULE_FILES,
    );
    await prometheus.start();
    await stack.until('Prometheus to scrape every app', async () => {
      const health = await prometheus.targetHealth();
      return ALL_APPS.every((app) => health[app]?.[0] === 'up') ? true : undefined;
    });

    // Traffic: addressed messages (episode → LLM → send), ambient ones (scored decisions), and a rejected post.
    let expectedSends = 0;
    for (const group of GROUPS) {
      expect((await stack.post(group, '在吗？', true)).status).toBe(204);
      expect((await stack.post(group, '今天好热')).status).toBe(204);
      // From someone the bot is not talking with: scored by attention (the line above may join the episode).
      expect(
        (await stack.post(group, '有人知道明天几点开会吗', false, { userId: '20009', nickname: '路人' })).status,
      ).toBe(204);
      expectedSends++;
    }
    const rejected = await fetch(`${stack.app('ingress').url}/onebot/v11/http`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' },
      body: '{}',
    });
    expect(rejected.status).toBeGreaterThanOrEqual(400);
    await stack.onebot.waitForSends(expectedSends, 60_000);
    // Counters created by the traffic need two scrapes for rate(); rules need an evaluation after that.
    await sleep(6000);
    writeFileSync(join(stack.logDir, 'metric-names.txt'), [...(await prometheus.metricNames())].sort().join('\n'));
  }, 240_000);

  afterAll(async () => {
    await prometheus?.stop();
    await stack.stop();
  }, 60_000);

  it('scrapes every app', async () => {
    const health = await prometheus.targetHealth();
    expect(Object.fromEntries(ALL_APPS.map((app) => [app, health[app]]))).toEqual(
      Object.fromEntries(ALL_APPS.map((app) => [app, ['up']])),
    );
  });

  const queries = dashboardQueries();
  it('has dashboard queries to check', () => {
    expect(queries.length).toBeGreaterThan(10);
  });

  it.each(queries.map((q): [string, PanelQuery] => [`${q.dashboard} / ${q.panel} / ${q.refId}`, q]))(
    'panel %s returns at least one series',
    async (_name, query) => {
      const result = await prometheus.query(query.promql);
      expect({ expr: query.expr, series: result.length > 0 }).toEqual({ expr: query.expr, series: true });
    },
  );

  const rules = ruleEntries();
  it.each(rules.map((r): [string, string] => [r.alert ?? r.record ?? '?', r.expr]))(
    'rule %s evaluates and names only exported metrics',
    async (_name, expr) => {
      await prometheus.query(expr);
      const exported = await prometheus.metricNames();
      expect(metricNames(expr).filter((name) => !exported.has(name))).toEqual([]);
    },
  );

  it('loaded every rule healthy', async () => {
    const loaded = await prometheus.rules();
    expect(loaded.map((r) => r.name).sort()).toEqual(rules.map((r) => r.alert ?? r.record).sort());
    expect(loaded.filter((r) => r.health !== 'ok')).toEqual([]);
  });

  it.each(autoscalerQueries())('autoscaler query %s returns a series', async (_where, expr) => {
    const result = await prometheus.query(expr);
    expect({ expr, series: result.length }).toEqual({ expr, series: 1 });
  });

  it('passes promtool on the rule files and their unit tests', () => {
    for (const file of RULE_FILES) {
      const check = promtool('check', 'rules', file);
      expect({ file, ...check }).toMatchObject({ file, status: 0 });
    }
    const tests = promtool('test', 'rules', join(REPO, 'deploy/prometheus/qunli.rules.test.yml'));
    expect(tests.status === 0 ? 'passed' : tests.output).toBe('passed');
  });

  it('passes promtool on the compose Prometheus configuration', () => {
    const check = promtool('check', 'config', join(REPO, 'deploy/prometheus/prometheus.yml'));
    expect(check).toMatchObject({ status: 0 });
  });

  it('passes promtool on the Kubernetes Prometheus configuration, its pod discovery stood in for', () => {
    // Debian's build leaves out Kubernetes service discovery (the `+ds` package has no client-go), so the check
    // runs on a copy whose kubernetes_sd_configs are replaced by a static target; the relabelling is kept.
    const config = parse(readFileSync(join(REPO, 'deploy/prometheus/prometheus.k8s.yml'), 'utf8')) as {
      scrape_configs: Record<string, unknown>[];
    };
    for (const job of config.scrape_configs) {
      expect(job.kubernetes_sd_configs).toBeDefined();
      delete job.kubernetes_sd_configs;
      job.static_configs = [{ targets: ['127.0.0.1:8082'] }];
    }
    const copy = join(stack.logDir, 'prometheus.k8s.yml');
    writeFileSync(copy, stringify(config));
    copyFileSync(join(REPO, 'deploy/prometheus/qunli.rules.yml'), join(stack.logDir, 'qunli.rules.yml'));
    expect(promtool('check', 'config', copy)).toMatchObject({ status: 0 });
  });
});
