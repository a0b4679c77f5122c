/**
 * deploy/k8s cannot be applied here (no cluster), so every variant an operator can apply is composed as
 * `kubectl apply -k` would (tools/deploy/lib/kustomize.ts), validated strictly against the Kubernetes and KEDA
 * schemas, and held to the operating contract: images, commands, ports, settings, probes, shutdown budgets.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { APP_NAMES, QunliConfig, SETTING_NAMES, type AppName } from '@app/platform';
import { k8sVariants, schemaErrors } from './lib/k8s-manifests.js';
import { kustomizeBuild, KustomizeError, type Manifest } from './lib/kustomize.js';
import { dashboardFiles, REPO, ruleEntries } from './lib/observability-files.js';

type ServiceApp = Exclude<AppName, 'tool'>;
const APPS = APP_NAMES.filter((name): name is ServiceApp => name !== 'tool');
const CONTRACT = new QunliConfig();
const portSetting = (app: ServiceApp): string => `${app.toUpperCase().replace(/-/g, '_')}_PORT`;
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

/** Settings an operator must be able to give every app (the operating contract). */
const CONTRACT_SETTINGS = [
  'REDIS_URL',
  'DATABASE_URL',
  'OPENAI_BASE_URL',
  'OPENAI_API_KEY',
  'QUNLI_MODEL_PLANNER',
  'QUNLI_MODEL_REPLYER',
  'QUNLI_MODEL_UTILS',
  'QUNLI_SELF_ID',
  'QUNLI_NICKNAMES',
  'QUNLI_GROUPS',
  'ONEBOT_ACCESS_TOKEN',
  'ONEBOT_SECRET',
  'ONEBOT_HTTP_API_URL',
  'ONEBOT_WS_URL',
  'QUNLI_TIME_SCALE',
  'QUNLI_TIME_EPOCH',
];

interface Probe {
  httpGet?: { path: string; port: number | string };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  volumes?: { name: string; configMap?: { name: string }; persistentVolumeClaim?: { claimName: string } }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}

const variants = k8sVariants();
const small = variants['overlays/small']!;

function find(manifests: Manifest[], kind: string, name: string): Manifest {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`no ${kind}/${name}`);
  return found;
}

function template(manifest: Manifest): PodTemplate {
  return (manifest.spec as { template: PodTemplate }).template;
}

function container(manifest: Manifest): Container {
  return template(manifest).spec.containers[0]!;
}

function settingsOf(manifests: Manifest[]): Record<string, string> {
  const configMap = find(manifests, 'ConfigMap', 'qunli-settings').data as Record<string, string>;
  const secret = find(manifests, 'Secret', 'qunli-secrets').stringData as Record<string, string>;
  return { ...configMap, ...secret };
}

/** A setting as the app would see it: the container's env over its envFrom objects, empty meaning the default. */
function effectiveSetting(manifests: Manifest[], c: Container, name: keyof QunliConfig): string {
  const explicit = c.env?.find((e) => e.name === name)?.value;
  const shared = settingsOf(manifests)[name];
  const value = explicit ?? shared;
  return value === undefined || value === ''
    ? String((CONTRACT as unknown as Record<string, string | number>)[name])
    : value;
}

function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** A Kubernetes memory quantity (`768Mi`, `1Gi`, `800M`, plain bytes) in MiB; NaN for anything else. */
function mebibytes(quantity: string): number {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|k|M|G)?$/.exec(quantity);
  if (!match) return Number.NaN;
  const factor = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, k: 1e3, M: 1e6, G: 1e9 }[match[2] ?? ''] ?? 1;
  return (Number(match[1]) * factor) / 2 ** 20;
}

const allVariants = Object.entries(variants);

describe('deploy/k8s composition', () => {
  it.each(allVariants)('%s: every manifest validates against its Kubernetes or KEDA schema', async (_v, manifests) => {
    const problems: string[] = [];
    for (const manifest of manifests) {
      for (const error of await schemaErrors(manifest)) {
        problems.push(`${manifest.kind}/${manifest.metadata.name}: ${error}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('refuses a kustomization field it does not implement instead of ignoring it', () => {
    expect(() => kustomizeBuild(join(REPO, 'tools/deploy/fixtures/unsupported-kustomization'))).toThrow(KustomizeError);
  });

  it('puts every namespaced object of the small overlay in the qunli namespace', () => {
    const outside = small.filter((m) => m.kind !== 'Namespace' && m.metadata.namespace !== 'qunli');
    expect(outside.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual([]);
    expect(find(small, 'RoleBinding', 'prometheus').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'prometheus', namespace: 'qunli' },
    ]);
  });

  it('pins the image of the small overlay to the package version', () => {
    for (const app of APPS) expect(container(find(small, 'Deployment', app)).image).toBe(`qunli:${VERSION}`);
    expect(container(find(small, 'Job', 'qunli-migrate')).image).toBe(`qunli:${VERSION}`);
  });
});

describe.each(allVariants)('deploy/k8s %s', (_variant, manifests) => {
  const referencedObjects = (kind: 'ConfigMap' | 'Secret' | 'PersistentVolumeClaim') =>
    manifests.filter((m) => m.kind === kind).map((m) => m.metadata.name);

  it.each(APPS)('runs %s from the one image, selected by its argument, on its contract port', (app) => {
    const deployment = find(manifests, 'Deployment', app);
    const c = container(deployment);
    expect(c.image).toBe(container(find(manifests, 'Job', 'qunli-migrate')).image);
    expect(c.args).toEqual([app]);
    expect(c.ports).toEqual([{ name: 'http', containerPort: CONTRACT.portOf(app) }]);
    expect(c.env?.find((e) => e.name === portSetting(app))?.value).toBe(String(CONTRACT.portOf(app)));
    const service = find(manifests, 'Service', app);
    const spec = service.spec as { selector: Record<string, string>; ports: { port: number; targetPort: string }[] };
    expect(spec.ports).toEqual([{ name: 'http', port: CONTRACT.portOf(app), targetPort: 'http' }]);
    expect(matches(spec.selector, template(deployment).metadata.labels)).toBe(true);
  });

  it.each(APPS)('%s is probed on /health and scraped on /metrics at its port', (app) => {
    const deployment = find(manifests, 'Deployment', app);
    const c = container(deployment);
    for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe]) {
      expect(probe?.httpGet).toEqual({ path: '/health', port: 'http' });
    }
    expect(template(deployment).metadata.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(CONTRACT.portOf(app)),
      'prometheus.io/path': '/metrics',
    });
  });

  it.each(APPS)('%s has CPU and memory requests and limits', (app) => {
    const { resources } = container(find(manifests, 'Deployment', app));
    expect(Object.keys(resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
    expect(Object.keys(resources?.limits ?? {}).sort()).toEqual(['cpu', 'memory']);
  });

  it.each(APPS)('%s stops on its own (QUNLI_SHUTDOWN_TIMEOUT_MS) within its grace period', (app) => {
    const deployment = find(manifests, 'Deployment', app);
    const c = container(deployment);
    const graceMs = (template(deployment).spec.terminationGracePeriodSeconds ?? 30) * 1000;
    const preStopMs = Number(c.lifecycle?.preStop?.exec?.command.at(-1) ?? 0) * 1000;
    const shutdownMs = Number(effectiveSetting(manifests, c, 'QUNLI_SHUTDOWN_TIMEOUT_MS'));
    expect(preStopMs + shutdownMs).toBeLessThan(graceMs);
  });

  it('gives the scheduler the memory a burst needs (docs/operations.md, "Memory limits in a container")', () => {
    // Node sizes the heap from this limit; at 512Mi the scheduler-memory burst peaked 14 MB under it.
    const limit = container(find(manifests, 'Deployment', 'scheduler')).resources?.limits?.memory ?? '';
    expect(mebibytes(limit)).toBeGreaterThanOrEqual(768);
  });

  it('lets cognition finish its longest episode before it is stopped', () => {
    const deployment = find(manifests, 'Deployment', 'cognition');
    const c = container(deployment);
    const episodeMs = Number(effectiveSetting(manifests, c, 'QUNLI_EPISODE_TIMEOUT_MS'));
    expect(Number(effectiveSetting(manifests, c, 'QUNLI_SHUTDOWN_TIMEOUT_MS'))).toBeGreaterThan(episodeMs);
    expect((template(deployment).spec.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(episodeMs);
  });

  it.each(APPS)('%s has a PodDisruptionBudget over its pods', (app) => {
    const budget = find(manifests, 'PodDisruptionBudget', app);
    const spec = budget.spec as { selector: { matchLabels: Record<string, string> }; maxUnavailable?: number };
    expect(matches(spec.selector.matchLabels, template(find(manifests, 'Deployment', app)).metadata.labels)).toBe(true);
    for (const other of APPS.filter((a) => a !== app)) {
      expect(matches(spec.selector.matchLabels, template(find(manifests, 'Deployment', other)).metadata.labels)).toBe(
        false,
      );
    }
    expect(spec.maxUnavailable).toBe(1);
  });

  it('runs the migrations as a Job with the settings every app gets', () => {
    const job = find(manifests, 'Job', 'qunli-migrate');
    const c = container(job);
    expect(c.args).toEqual(['tool', 'migrate']);
    expect(c.envFrom).toEqual(container(find(manifests, 'Deployment', 'scheduler')).envFrom);
  });

  it('gives every app and the migrations the contract settings, under names the runtime knows', () => {
    const settings = settingsOf(manifests);
    expect(Object.keys(settings).filter((name) => !SETTING_NAMES.has(name))).toEqual([]);
    expect(CONTRACT_SETTINGS.filter((name) => !(name in settings))).toEqual([]);
    for (const workload of [
      ...APPS.map((app) => find(manifests, 'Deployment', app)),
      find(manifests, 'Job', 'qunli-migrate'),
    ]) {
      const c = container(workload);
      expect(c.envFrom).toEqual([
        { configMapRef: { name: 'qunli-settings' } },
        { secretRef: { name: 'qunli-secrets' } },
      ]);
      expect((c.env ?? []).map((e) => e.name).filter((name) => !SETTING_NAMES.has(name))).toEqual([]);
    }
  });

  it('mounts only ConfigMaps and claims the variant defines', () => {
    for (const workload of manifests.filter((m) => ['Deployment', 'StatefulSet', 'Job'].includes(m.kind))) {
      for (const volume of template(workload).spec.volumes ?? []) {
        if (volume.configMap) expect(referencedObjects('ConfigMap')).toContain(volume.configMap.name);
        if (volume.persistentVolumeClaim) {
          expect(referencedObjects('PersistentVolumeClaim')).toContain(volume.persistentVolumeClaim.claimName);
        }
      }
    }
  });
});

describe('deploy/k8s/overlays/small: Redis, PostgreSQL, Prometheus and Grafana in the cluster', () => {
  it('runs Redis with AOF every second and noeviction, on a volume, where REDIS_URL points', () => {
    const redis = find(small, 'StatefulSet', 'redis');
    const c = container(redis);
    expect(c.image).toMatch(/^redis:7/);
    const args = (c.args ?? []).join(' ');
    expect(args).toContain('--appendonly yes');
    expect(args).toContain('--appendfsync everysec');
    expect(args).toContain('--maxmemory-policy noeviction');
    const claims = (redis.spec as { volumeClaimTemplates: { metadata: { name: string } }[] }).volumeClaimTemplates;
    expect(c.volumeMounts).toEqual([{ name: claims[0]!.metadata.name, mountPath: '/data' }]);
    const url = new URL(settingsOf(small).REDIS_URL!);
    expect(find(small, 'Service', url.hostname).metadata.namespace).toBe('qunli');
    expect(url.port || '6379').toBe('6379');
  });

  it('runs PostgreSQL 16 with the qunli database on a volume, with the password DATABASE_URL carries', () => {
    const postgres = find(small, 'StatefulSet', 'postgres');
    const c = container(postgres);
    expect(c.image).toMatch(/^postgres:16/);
    expect(c.env?.find((e) => e.name === 'POSTGRES_DB')?.value).toBe('qunli');
    expect(JSON.stringify(c.readinessProbe)).toContain('pg_isready');
    expect(c.volumeMounts?.[0]?.mountPath).toBe('/var/lib/postgresql/data');
    const url = new URL(settingsOf(small).DATABASE_URL!);
    expect([url.hostname, url.port, url.pathname]).toEqual(['postgres', '5432', '/qunli']);
    expect(find(small, 'Service', 'postgres')).toBeDefined();
    const password = (find(small, 'Secret', 'postgres-credentials').stringData as Record<string, string>)
      .POSTGRES_PASSWORD;
    expect(decodeURIComponent(url.password)).toBe(password);
  });

  it('lets PostgreSQL take every pool at the most replicas the overlay runs (cognition keeps its pool open)', () => {
    const args = container(find(small, 'StatefulSet', 'postgres')).args ?? [];
    const set = args.map((arg) => /^max_connections=(\d+)$/.exec(arg)?.[1]).find((n) => n !== undefined);
    // Without the flag, the image's default.
    const maxConnections = Number(set ?? 100);
    const maxReplicas = (scaled: Manifest) => (scaled.spec as { maxReplicaCount: number }).maxReplicaCount;
    let pools = 0;
    for (const app of APPS) {
      const deployment = find(small, 'Deployment', app);
      const replicas =
        app === 'cognition'
          ? maxReplicas(find(small, 'ScaledObject', 'cognition'))
          : ((deployment.spec as { replicas?: number }).replicas ?? 1);
      pools += replicas * Number(effectiveSetting(small, container(deployment), 'QUNLI_DB_POOL_SIZE'));
    }
    // Postgres keeps 3 for superusers; the migration Job and a person's psql or `npm run why` want a few more.
    expect(pools + 3 + 10).toBeLessThanOrEqual(maxConnections);
  });

  it('ships the repository rules and Prometheus configuration to the in-cluster Prometheus', () => {
    const config = find(small, 'ConfigMap', 'prometheus-config').data as Record<string, string>;
    expect(config['qunli.rules.yml']).toBe(readFileSync(join(REPO, 'deploy/prometheus/qunli.rules.yml'), 'utf8'));
    const prometheus = parse(config['prometheus.yml']!) as { rule_files: string[] };
    expect(prometheus.rule_files).toEqual(['qunli.rules.yml']);
  });

  it('ships every dashboard in deploy/grafana/dashboards to Grafana', () => {
    const dashboards = find(small, 'ConfigMap', 'grafana-dashboards').data as Record<string, string>;
    expect(Object.keys(dashboards).sort()).toEqual(dashboardFiles());
  });
});

describe('cognition autoscaling', () => {
  const rulesBacklog = ruleEntries().find((r) => r.record === 'qunli:episodes_backlog')!;
  const concurrency = (manifests: Manifest[]) =>
    Number(
      effectiveSetting(manifests, container(find(manifests, 'Deployment', 'cognition')), 'QUNLI_COGNITION_CONCURRENCY'),
    );

  it.each([['overlays/small'], ['base + components/keda']])(
    '%s: KEDA scales cognition on the episodes backlog, QUNLI_COGNITION_CONCURRENCY per replica',
    (variant) => {
      const manifests = variants[variant]!;
      const scaled = find(manifests, 'ScaledObject', 'cognition');
      const spec = scaled.spec as {
        scaleTargetRef: { name: string; kind?: string };
        minReplicaCount: number;
        maxReplicaCount: number;
        triggers: { type: string; metadata: { serverAddress: string; query: string; threshold: string } }[];
      };
      expect(spec.scaleTargetRef.name).toBe('cognition');
      expect(spec.scaleTargetRef.kind ?? 'Deployment').toBe('Deployment');
      expect(spec.minReplicaCount).toBeGreaterThanOrEqual(1);
      expect(spec.maxReplicaCount).toBeGreaterThan(spec.minReplicaCount);
      const [trigger] = spec.triggers;
      expect(trigger!.type).toBe('prometheus');
      // The same expression as the recorded series the HPA alternative uses.
      expect(trigger!.metadata.query).toBe(rulesBacklog.expr);
      expect(Number(trigger!.metadata.threshold)).toBe(concurrency(manifests));
    },
  );

  it('points KEDA at the Prometheus the small overlay runs', () => {
    const spec = find(small, 'ScaledObject', 'cognition').spec as {
      triggers: { metadata: { serverAddress: string } }[];
    };
    const address = new URL(spec.triggers[0]!.metadata.serverAddress);
    const [service, namespace] = address.hostname.split('.');
    const prometheus = find(small, 'Service', service!);
    expect(prometheus.metadata.namespace).toBe(namespace);
    const ports = (prometheus.spec as { ports: { port: number }[] }).ports.map((p) => p.port);
    expect(ports).toContain(Number(address.port));
  });

  it('offers an HPA on the same signal for clusters without KEDA', () => {
    const manifests = variants['base + components/hpa']!;
    const spec = find(manifests, 'HorizontalPodAutoscaler', 'cognition').spec as {
      scaleTargetRef: { kind: string; name: string };
      metrics: { type: string; external: { metric: { name: string }; target: { averageValue: string } } }[];
    };
    expect(spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'cognition' });
    expect(spec.metrics[0]!.external.metric.name).toBe(rulesBacklog.record!.replace(/:/g, '_'));
    expect(Number(spec.metrics[0]!.external.target.averageValue)).toBe(concurrency(manifests));
  });
});
