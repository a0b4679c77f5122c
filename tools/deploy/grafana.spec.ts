/**
 * The Grafana dashboards are JSON an operator never edits by hand; these checks keep them loadable and wired to
 * the provisioned datasource. Whether each query returns data is the observability tier's job
 * (test/observability), which evaluates every panel against the running apps.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { allPanels, dashboardFiles, readDashboard, REPO, toPromQL } from './lib/observability-files.js';
import { metricNames } from './lib/promql.js';

const datasource = (
  parse(readFileSync(join(REPO, 'deploy/grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as {
    datasources: { uid: string; type: string }[];
  }
).datasources[0]!;

describe.each(dashboardFiles())('deploy/grafana/dashboards/%s', (file) => {
  const dashboard = readDashboard(file);
  const panels = allPanels(dashboard);
  const dataPanels = panels.filter((panel) => panel.type !== 'row');

  it('has a uid, a title and unique panel ids', () => {
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(dashboard.title).not.toBe('');
    const ids = panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('queries the provisioned Prometheus datasource from every panel and target', () => {
    for (const panel of dataPanels) {
      expect(panel.datasource).toEqual({ type: datasource.type, uid: datasource.uid });
      for (const target of panel.targets ?? []) expect(target.datasource).toEqual(panel.datasource);
    }
  });

  it('gives every panel a title, a description and at least one query naming a metric', () => {
    for (const panel of dataPanels) {
      expect({ title: panel.title, described: (panel.description ?? '') !== '' }).toEqual({
        title: expect.any(String),
        described: true,
      });
      expect((panel.targets ?? []).length).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(metricNames(toPromQL(target.expr ?? '')).length).toBeGreaterThan(0);
      }
    }
  });

  it('lays the panels out on the 24-column grid without overlaps', () => {
    const cells = new Set<string>();
    for (const panel of panels) {
      const { x, y, w, h } = panel.gridPos!;
      expect(x + w).toBeLessThanOrEqual(24);
      for (let col = x; col < x + w; col++) {
        for (let row = y; row < y + h; row++) {
          const cell = `${col},${row}`;
          expect({ panel: panel.title, cell, taken: cells.has(cell) }).toEqual({
            panel: panel.title,
            cell,
            taken: false,
          });
          cells.add(cell);
        }
      }
    }
  });
});

describe('deploy/grafana', () => {
  it('has distinct dashboard uids', () => {
    const uids = dashboardFiles().map((file) => readDashboard(file).uid);
    expect(new Set(uids).size).toBe(uids.length);
  });

  it('opens on a dashboard that exists', () => {
    const ini = readFileSync(join(REPO, 'deploy/grafana/grafana.ini'), 'utf8');
    const home = /default_home_dashboard_path\s*=\s*\/etc\/grafana\/dashboards\/(\S+)/.exec(ini)?.[1];
    expect(dashboardFiles()).toContain(home);
  });
});
