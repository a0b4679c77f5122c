import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/**
 * Readers for the observability files an operator deploys (Grafana dashboards, Prometheus rules), shared by the
 * specs that hold them to their structure and by the tier that evaluates them against a real Prometheus.
 */

export const REPO = join(import.meta.dirname, '..', '..', '..');
export const DASHBOARD_DIR = join(REPO, 'deploy', 'grafana', 'dashboards');
export const RULE_FILES = [join(REPO, 'deploy', 'prometheus', 'qunli.rules.yml')];

export interface GrafanaTarget {
  refId?: string;
  expr?: string;
  datasource?: { type?: string; uid?: string };
}

export interface GrafanaPanel {
  id?: number;
  type: string;
  title?: string;
  description?: string;
  datasource?: { type?: string; uid?: string };
  gridPos?: { h: number; w: number; x: number; y: number };
  targets?: GrafanaTarget[];
  panels?: GrafanaPanel[];
}

export interface GrafanaDashboard {
  uid: string;
  title: string;
  panels: GrafanaPanel[];
  templating?: { list?: unknown[] };
}

export interface PanelQuery {
  dashboard: string;
  panel: string;
  refId: string;
  /** As written in the dashboard, Grafana variables included. */
  expr: string;
  /** With Grafana's built-in interval variables replaced, ready for Prometheus. */
  promql: string;
}

export function dashboardFiles(): string[] {
  return readdirSync(DASHBOARD_DIR)
    .filter((name) => name.endsWith('.json'))
    .sort();
}

export function readDashboard(file: string): GrafanaDashboard {
  return JSON.parse(readFileSync(join(DASHBOARD_DIR, file), 'utf8')) as GrafanaDashboard;
}

/** Every panel, rows' nested panels included. */
export function allPanels(dashboard: GrafanaDashboard): GrafanaPanel[] {
  return dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
}

/** Grafana's built-in variables, as Grafana would fill them for the default one-hour view. */
const GRAFANA_VARIABLES: Record<string, string> = {
  __rate_interval: '1m',
  __interval: '15s',
  __range: '1h',
};

export function toPromQL(expr: string): string {
  return expr.replace(/\$\{?(__[a-z_]+)\}?/g, (whole, name: string) => {
    const value = GRAFANA_VARIABLES[name];
    if (value === undefined) throw new Error(`unknown Grafana variable ${whole} in: ${expr}`);
    return value;
  });
}

export function dashboardQueries(): PanelQuery[] {
  return dashboardFiles().flatMap((file) => {
    const dashboard = readDashboard(file);
    return allPanels(dashboard).flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({
        dashboard: dashboard.title,
        panel: panel.title ?? `#${panel.id}`,
        refId: target.refId ?? '?',
        expr: target.expr ?? '',
        promql: toPromQL(target.expr ?? ''),
      })),
    );
  });
}

export interface RuleEntry {
  file: string;
  group: string;
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function ruleEntries(): RuleEntry[] {
  return RULE_FILES.flatMap((file) => {
    const parsed = parse(readFileSync(file, 'utf8')) as {
      groups: { name: string; rules: Omit<RuleEntry, 'file' | 'group'>[] }[];
    };
    return parsed.groups.flatMap((group) => group.rules.map((rule) => ({ ...rule, file, group: group.name })));
  });
}
