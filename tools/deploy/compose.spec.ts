/**
 * docker-compose.yml, the Dockerfile and the Prometheus config cannot be run here (no Docker engine), so these
 * tests hold them to the operating contract instead: every app, port, environment name and dependency.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { APP_NAMES, QunliConfig, SETTING_NAMES, type AppName } from '@app/platform';

// ---------------------------------------------------------------------------------------------------------------
// Readers for the files under test

const ROOT = join(import.meta.dirname, '..', '..');

function readRepoFile(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

function repoPathExists(path: string): boolean {
  return existsSync(join(ROOT, path));
}

// ---------------------------------------------------------------------------------------------------------------
// docker-compose.yml

interface ComposeHealthcheck {
  test?: string | string[];
}

interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string; args?: Record<string, string> };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | number | { target?: number; published?: string | number })[];
  expose?: (string | number)[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: ComposeHealthcheck;
  volumes?: (string | { source?: string; target?: string; type?: string })[];
  profiles?: string[];
  restart?: string;
  stop_grace_period?: string;
  container_name?: string;
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** Compose resolves YAML merge keys (`<<: *anchor`), so the parse does too. */
function parseCompose(text: string): ComposeFile {
  return parse(text, { merge: true }) as ComposeFile;
}

function environmentOf(service: ComposeService): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const at = entry.indexOf('=');
        return at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([key, value]) => [key, value === null ? '' : String(value)]));
}

/** Names interpolated with `${NAME}`, `${NAME:-x}`, `${NAME:?x}` or `$NAME` (`$$` is a literal dollar). */
function interpolatedNames(text: string): string[] {
  const names = new Set<string>();
  for (const match of text.matchAll(/(?<!\$)\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))/g)) {
    names.add(match[1] ?? match[2]!);
  }
  return [...names];
}

function commandOf(service: ComposeService): string[] {
  const command = service.command ?? [];
  return typeof command === 'string' ? command.split(/\s+/).filter((part) => part !== '') : command;
}

/** Container ports a service publishes on the host. */
function publishedContainerPorts(service: ComposeService): number[] {
  return (service.ports ?? []).map((port) => {
    if (typeof port === 'object') return Number(port.target);
    const text = String(port).replace(/\/(tcp|udp)$/, '');
    return Number(text.split(':').at(-1));
  });
}

function dependencyConditions(service: ComposeService): Record<string, string | undefined> {
  const dependsOn = service.depends_on ?? {};
  if (Array.isArray(dependsOn)) return Object.fromEntries(dependsOn.map((name) => [name, 'service_started']));
  return Object.fromEntries(Object.entries(dependsOn).map(([name, spec]) => [name, spec.condition]));
}

function healthcheckText(service: ComposeService): string {
  const test = service.healthcheck?.test ?? [];
  return typeof test === 'string' ? test : test.join(' ');
}

/** Named volumes (not bind mounts) a service mounts, with their targets. */
function namedVolumes(service: ComposeService): { source: string; target: string }[] {
  return (service.volumes ?? [])
    .map((volume) => {
      if (typeof volume === 'object') return { source: volume.source ?? '', target: volume.target ?? '' };
      const [source = '', target = ''] = volume.split(':');
      return { source, target };
    })
    .filter((volume) => /^[A-Za-z0-9][\w.-]*$/.test(volume.source));
}

/** Host paths a service bind-mounts (`./deploy/x.yml:/etc/x.yml`). */
function bindMountSources(service: ComposeService): string[] {
  return (service.volumes ?? [])
    .map((volume) => (typeof volume === 'object' ? (volume.source ?? '') : (volume.split(':')[0] ?? '')))
    .filter((source) => source.startsWith('./') || source.startsWith('../'));
}

// ---------------------------------------------------------------------------------------------------------------
// Dockerfile

interface DockerInstruction {
  keyword: string;
  args: string;
}

interface DockerStage {
  name: string | undefined;
  from: string;
  instructions: DockerInstruction[];
}

/** Instructions grouped by stage, with line continuations joined and comments dropped. */
function parseDockerfile(text: string): DockerStage[] {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(pending + line);
    pending = '';
  }
  const stages: DockerStage[] = [];
  for (const line of logical) {
    const [keyword = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') {
      const match = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: match?.[1] ?? args, name: match?.[2], instructions: [] });
    } else if (stages.length > 0) {
      stages.at(-1)!.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

/** Global ARGs before the first FROM, e.g. `ARG NODE_IMAGE=node:20-bookworm-slim`. */
function globalArgs(text: string): Record<string, string> {
  const args: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (/^FROM\s/i.test(trimmed)) break;
    const match = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)/i.exec(trimmed);
    if (match) args[match[1]!] = match[2]!;
  }
  return args;
}

function resolveArgs(value: string, args: Record<string, string>): string {
  return value.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (whole, name: string) => args[name] ?? whole);
}

/** COPY sources read from the build context (not `--from=` another stage). */
function contextCopySources(stage: DockerStage): string[] {
  return stage.instructions
    .filter((instruction) => instruction.keyword === 'COPY' && !/--from=/.test(instruction.args))
    .flatMap((instruction) => {
      const parts = instruction.args.split(/\s+/).filter((part) => !part.startsWith('--'));
      return parts.slice(0, -1);
    });
}

/** Whether a .dockerignore pattern (top-level names and `*` globs are all this repository uses) excludes a path. */
function dockerignoreExcludes(patterns: string[], path: string): boolean {
  const top = path.replace(/^\.\//, '').split('/')[0]!;
  let excluded = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const body = (negated ? pattern.slice(1) : pattern).replace(/^\//, '').replace(/\/$/, '');
    const regex = new RegExp(`^${body.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    if (regex.test(top) || regex.test(path)) excluded = !negated;
  }
  return excluded;
}

function dockerignorePatterns(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

// ---------------------------------------------------------------------------------------------------------------
// The contract

type ServiceApp = Exclude<AppName, 'tool'>;
const APPS = APP_NAMES.filter((name): name is ServiceApp => name !== 'tool');
const CONTRACT = new QunliConfig();

/** `life-director` → `LIFE_DIRECTOR_PORT`. */
const portSetting = (app: ServiceApp): string => `${app.toUpperCase().replace(/-/g, '_')}_PORT`;

/** Variables the official postgres and redis images read; not qunli settings, but legitimately in the file. */
const IMAGE_VARIABLES = new Set([
  'POSTGRES_DB',
  'POSTGRES_USER',
  'POSTGRES_PASSWORD',
  'POSTGRES_HOST_AUTH_METHOD',
  'POSTGRES_INITDB_ARGS',
  'PGDATA',
  'REDIS_PASSWORD',
]);

/** Settings the operating contract says an operator passes to the apps. */
const PASSED_THROUGH = [
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

const composeText = readRepoFile('docker-compose.yml');
const compose = parseCompose(composeText);
const dockerfileText = readRepoFile('Dockerfile');
const stages = parseDockerfile(dockerfileText);
const runtime = stages.at(-1)!;
const entrypointScript = readRepoFile('deploy/docker-entrypoint.sh');

function service(name: string): ComposeService {
  const found = compose.services[name];
  if (found === undefined) throw new Error(`docker-compose.yml has no service "${name}"`);
  return found;
}

/** `${REDIS_URL:-x}` style values are resolved with their defaults, as compose would with nothing set. */
function withDefaults(value: string): string {
  return value.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-?]([^}]*))?\}/g, (_whole, fallback: string | undefined) =>
    fallback === undefined ? '' : fallback,
  );
}

describe('docker-compose.yml', () => {
  it('runs the five apps, all from the one Dockerfile image, each selected by its command', () => {
    const images = new Set<string | undefined>();
    for (const app of APPS) {
      const svc = service(app);
      const build = typeof svc.build === 'string' ? { context: svc.build } : svc.build;
      expect({ app, context: build?.context, dockerfile: build?.dockerfile ?? 'Dockerfile' }).toEqual({
        app,
        context: '.',
        dockerfile: 'Dockerfile',
      });
      expect({ app, selector: commandOf(svc)[0] }).toEqual({ app, selector: app });
      images.add(svc.image);
    }
    expect(images.size).toBe(1);
  });

  it.each(APPS)('%s listens on its contract port, says so in its *_PORT setting, and no other', (app) => {
    const svc = service(app);
    const port = CONTRACT.portOf(app);
    expect(SETTING_NAMES.has(portSetting(app))).toBe(true);
    expect(environmentOf(svc)[portSetting(app)]).toBe(String(port));
    for (const published of publishedContainerPorts(svc)) expect(published).toBe(port);
    for (const exposed of svc.expose ?? []) expect(Number(exposed)).toBe(port);
    expect(healthcheckText(svc)).toContain(`127.0.0.1:${port}/health`);
  });

  it('publishes the ingress port, where OneBot implementations connect', () => {
    expect(publishedContainerPorts(service('ingress'))).toContain(CONTRACT.INGRESS_PORT);
  });

  it('publishes no host port for cognition, so it can be scaled (--scale cognition=3)', () => {
    expect(service('cognition').ports ?? []).toEqual([]);
  });

  it('uses only environment names the runtime knows, or that the postgres/redis images read', () => {
    const names = new Set(interpolatedNames(composeText));
    for (const svc of Object.values(compose.services))
      for (const name of Object.keys(environmentOf(svc))) names.add(name);
    const unknown = [...names].filter((name) => !SETTING_NAMES.has(name) && !IMAGE_VARIABLES.has(name));
    expect(unknown).toEqual([]);
  });

  it.each(APPS)('%s gets every operator setting of the contract passed through', (app) => {
    const env = environmentOf(service(app));
    const missing = PASSED_THROUGH.filter((name) => !(name in env));
    expect(missing).toEqual([]);
  });

  it.each([...APPS, 'migrate'])('%s reaches Redis and Postgres at the compose services', (name) => {
    const env = environmentOf(service(name));
    const redis = new URL(withDefaults(env.REDIS_URL ?? ''));
    const postgres = new URL(withDefaults(env.DATABASE_URL ?? ''));
    expect([redis.protocol, redis.hostname, redis.port || '6379']).toEqual(['redis:', 'redis', '6379']);
    expect([postgres.protocol, postgres.hostname, postgres.port || '5432', postgres.pathname]).toEqual([
      'postgres:',
      'postgres',
      '5432',
      '/qunli',
    ]);
    const postgresEnv = environmentOf(service('postgres'));
    const password = withDefaults(postgresEnv.POSTGRES_PASSWORD ?? '');
    if (postgresEnv.POSTGRES_HOST_AUTH_METHOD !== 'trust') expect(decodeURIComponent(postgres.password)).toBe(password);
  });

  it('runs Redis with AOF every second and noeviction (BullMQ needs it)', () => {
    const redis = service('redis');
    expect(redis.image).toMatch(/^redis:7/);
    const command = commandOf(redis).join(' ');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--appendfsync everysec');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(namedVolumes(redis).map((volume) => volume.target)).toContain('/data');
    expect(healthcheckText(redis)).toContain('ping');
  });

  it('runs Postgres 16 with the qunli database, credentials, a volume and a readiness check', () => {
    const postgres = service('postgres');
    const env = environmentOf(postgres);
    expect(postgres.image).toMatch(/^postgres:16/);
    expect(env.POSTGRES_DB).toBe('qunli');
    expect(env.POSTGRES_PASSWORD !== undefined || env.POSTGRES_HOST_AUTH_METHOD !== undefined).toBe(true);
    expect(namedVolumes(postgres).map((volume) => volume.target)).toContain('/var/lib/postgresql/data');
    expect(healthcheckText(postgres)).toContain('pg_isready');
  });

  it('runs the migrations once, after Redis and Postgres are healthy', () => {
    const migrate = service('migrate');
    expect(commandOf(migrate)).toEqual(['tool', 'migrate']);
    expect(migrate.image).toBe(service('ingress').image);
    expect(migrate.restart).toBe('no');
    expect(dependencyConditions(migrate)).toEqual({ redis: 'service_healthy', postgres: 'service_healthy' });
  });

  it.each(APPS)('%s starts only after healthy Redis and Postgres and finished migrations', (app) => {
    expect(dependencyConditions(service(app))).toMatchObject({
      redis: 'service_healthy',
      postgres: 'service_healthy',
      migrate: 'service_completed_successfully',
    });
  });

  it('declares every named volume and ships every bind-mounted file', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const svc of Object.values(compose.services)) {
      for (const volume of namedVolumes(svc)) expect(declared).toContain(volume.source);
      for (const source of bindMountSources(svc))
        expect({ source, exists: repoPathExists(source) }).toEqual({ source, exists: true });
    }
  });
});

/** `45s`, `2m`, `1m30s` → milliseconds (compose durations). */
function durationMs(text: string | undefined): number {
  if (text === undefined) return 10_000;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(amount) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h'];
  }
  return total;
}

describe('docker-compose.yml as one `docker compose up`', () => {
  it('needs no setting from the operator (nothing is interpolated as required)', () => {
    expect(composeText).not.toMatch(/\$\{[A-Za-z_][A-Za-z0-9_]*:?\?/);
  });

  it('starts every service by default: the apps, the simulator, Prometheus and Grafana', () => {
    const optional = Object.entries(compose.services).filter(([, svc]) => (svc.profiles ?? []).length > 0);
    expect(optional.map(([name]) => name)).toEqual([]);
    for (const name of [...APPS, 'redis', 'postgres', 'migrate', 'simulator', 'prometheus', 'grafana']) {
      expect(Object.keys(compose.services)).toContain(name);
    }
  });

  it('sends to the simulator unless ONEBOT_HTTP_API_URL names a OneBot implementation', () => {
    const url = new URL(withDefaults(environmentOf(service('outbound')).ONEBOT_HTTP_API_URL ?? ''));
    expect(url.hostname).toBe('simulator');
    expect(commandOf(service('simulator'))).toEqual(expect.arrayContaining(['--port', url.port]));
  });

  it('lets cognition be scaled: no host port, no fixed container name', () => {
    expect(service('cognition').ports ?? []).toEqual([]);
    expect(service('cognition').container_name).toBeUndefined();
  });

  it.each(APPS)('gives %s a stop grace period above its own shutdown budget', (app) => {
    const svc = service(app);
    const shutdownMs = Number(environmentOf(svc).QUNLI_SHUTDOWN_TIMEOUT_MS ?? CONTRACT.QUNLI_SHUTDOWN_TIMEOUT_MS);
    expect(durationMs(svc.stop_grace_period)).toBeGreaterThan(shutdownMs);
  });

  it('lets cognition finish its longest episode before it is stopped', () => {
    const shutdownMs = Number(environmentOf(service('cognition')).QUNLI_SHUTDOWN_TIMEOUT_MS);
    expect(shutdownMs).toBeGreaterThan(CONTRACT.QUNLI_EPISODE_TIMEOUT_MS);
  });

  it('gives Prometheus its configuration and the rules file beside it', () => {
    const mounts = Object.fromEntries(
      (service('prometheus').volumes ?? [])
        .filter((v): v is string => typeof v === 'string')
        .map((v) => [v.split(':')[1], v.split(':')[0]]),
    );
    expect(mounts['/etc/prometheus/prometheus.yml']).toBe('./deploy/prometheus/prometheus.yml');
    const config = parse(readRepoFile('deploy/prometheus/prometheus.yml')) as { rule_files: string[] };
    for (const file of config.rule_files) {
      expect(mounts[`/etc/prometheus/${file}`]).toBe(`./deploy/prometheus/${file}`);
    }
  });

  it('provisions Grafana with the Prometheus service as its datasource and the dashboards directory', () => {
    const mounts = (service('grafana').volumes ?? []).filter((v): v is string => typeof v === 'string');
    expect(mounts).toEqual(
      expect.arrayContaining([
        './deploy/grafana/provisioning:/etc/grafana/provisioning:ro',
        './deploy/grafana/dashboards:/etc/grafana/dashboards:ro',
      ]),
    );
    const datasources = parse(readRepoFile('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { url: string; uid: string }[];
    };
    const url = new URL(datasources.datasources[0]!.url);
    expect(url.hostname).toBe('prometheus');
    expect(publishedContainerPorts(service('prometheus'))).toContain(Number(url.port));
    const providers = parse(readRepoFile('deploy/grafana/provisioning/dashboards/qunli.yml')) as {
      providers: { options: { path: string } }[];
    };
    expect(providers.providers[0]!.options.path).toBe('/etc/grafana/dashboards');
  });
});

describe('deploy/prometheus/prometheus.yml', () => {
  interface ScrapeConfig {
    job_name: string;
    metrics_path?: string;
    dns_sd_configs?: { names: string[]; port: number }[];
    static_configs?: { targets: string[] }[];
  }
  const prometheus = parse(readRepoFile('deploy/prometheus/prometheus.yml')) as {
    scrape_configs: ScrapeConfig[];
    rule_files: string[];
  };

  it.each(APPS)('scrapes %s at its contract port on /metrics', (app) => {
    const job = prometheus.scrape_configs.find((config) => config.job_name === app);
    expect(job).toBeDefined();
    expect(job!.metrics_path ?? '/metrics').toBe('/metrics');
    const targets = [
      ...(job!.dns_sd_configs ?? []).flatMap((sd) => sd.names.map((name) => `${name}:${sd.port}`)),
      ...(job!.static_configs ?? []).flatMap((config) => config.targets),
    ];
    expect(targets).toEqual([`${app}:${CONTRACT.portOf(app)}`]);
  });
});

describe('Dockerfile', () => {
  const args = globalArgs(dockerfileText);
  const runsIn = (pattern: RegExp) =>
    stages.filter((stage) => stage.instructions.some((i) => i.keyword === 'RUN' && pattern.test(i.args)));

  it('is a multi-stage build whose runtime is Node 20', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    expect(resolveArgs(runtime.from, args)).toMatch(/^node:20/);
  });

  /** A stage and the stages it is built FROM, nearest first. */
  function lineage(stage: DockerStage): DockerStage[] {
    const chain = [stage];
    let parent = stages.find((s) => s.name === stage.from);
    while (parent !== undefined && !chain.includes(parent)) {
      chain.push(parent);
      const from = parent.from;
      parent = stages.find((s) => s.name === from);
    }
    return chain;
  }

  it('builds every app and tool with npm run build, on top of a locked npm ci', () => {
    const building = runsIn(/\bnpm run build\b/);
    expect(building).toHaveLength(1);
    const fullInstall = runsIn(/\bnpm ci\b(?!.*--omit=dev)/);
    expect(lineage(building[0]!).some((stage) => fullInstall.includes(stage))).toBe(true);
    for (const source of ['apps', 'libs', 'tools', 'tsconfig.build.json']) {
      expect(contextCopySources(building[0]!)).toContain(source);
    }
  });

  it('ships only production dependencies, the build output and the personas', () => {
    const copies = runtime.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args);
    const prodStage = runsIn(/\bnpm ci\b.*--omit=dev/)[0];
    expect(prodStage?.name).toBeDefined();
    expect(copies.some((c) => c.includes(`--from=${prodStage!.name}`) && c.includes('node_modules'))).toBe(true);
    const buildStage = runsIn(/\bnpm run build\b/)[0]!;
    expect(copies.some((c) => c.includes(`--from=${buildStage.name}`) && /\/app\/dist\b/.test(c))).toBe(true);
    expect(contextCopySources(runtime)).toContain('personas');
    expect(runsIn(/\bnpm ci\b(?!.*--omit=dev)/)).not.toContain(runtime);
  });

  it('selects the app with ARG/ENV APP and runs as a non-root user', () => {
    const keywords = (keyword: string) => runtime.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
    expect(keywords('ARG').some((a) => /^APP(=|$)/.test(a))).toBe(true);
    expect(keywords('ENV').some((e) => /\bAPP=\$\{?APP\}?/.test(e))).toBe(true);
    const user = keywords('USER').at(-1);
    expect(user).toBeDefined();
    expect(['root', '0'].includes(user!.split(':')[0]!)).toBe(false);
  });

  it('exposes every app port', () => {
    const exposed = runtime.instructions
      .filter((i) => i.keyword === 'EXPOSE')
      .flatMap((i) => i.args.split(/\s+/))
      .map((port) => Number(port.replace(/\/tcp$/, '')));
    for (const app of APPS) expect(exposed).toContain(CONTRACT.portOf(app));
  });

  it('copies only files that exist and that .dockerignore lets into the build context', () => {
    const ignored = dockerignorePatterns(readRepoFile('.dockerignore'));
    for (const stage of stages) {
      for (const source of contextCopySources(stage)) {
        expect({ source, exists: repoPathExists(source), ignored: dockerignoreExcludes(ignored, source) }).toEqual({
          source,
          exists: true,
          ignored: false,
        });
      }
    }
    for (const heavy of ['node_modules', 'dist', '.git']) expect(dockerignoreExcludes(ignored, heavy)).toBe(true);
  });

  it('has an entrypoint that starts each app from dist/ and runs tools', () => {
    expect(runtime.instructions.some((i) => i.keyword === 'ENTRYPOINT')).toBe(true);
    expect(entrypointScript).toContain('exec node "dist/apps/$app/src/main.js"');
    expect(entrypointScript).toContain('exec node "dist/tools/$name/main.js"');
    for (const app of APPS) expect(entrypointScript).toMatch(new RegExp(`(^|[\\s|(])${app}([\\s|)])`, 'm'));
  });

  it.each(APPS)('%s has the entry point the image runs (apps/<app>/src/main.ts)', (app) => {
    expect(repoPathExists(`apps/${app}/src/main.ts`)).toBe(true);
  });
});
