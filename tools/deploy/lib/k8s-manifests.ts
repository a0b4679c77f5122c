import { join } from 'node:path';
import { kustomizeBuild, withComponent, type Manifest } from './kustomize.js';
import { REPO } from './observability-files.js';

/**
 * The Kubernetes manifests as they would be applied, and their validation against the Kubernetes OpenAPI schemas
 * and KEDA's ScaledObject CRD schema, both as packaged by kubernetes-models (validators compiled by ajv from the
 * upstream schemas; installed from the lockfile, so the check runs offline).
 */

export const K8S = join(REPO, 'deploy', 'k8s');

/** Every variant an operator can apply: the base alone, the small overlay, and the base with each component. */
export function k8sVariants(): Record<string, Manifest[]> {
  const base = kustomizeBuild(join(K8S, 'base'));
  return {
    base,
    'overlays/small': kustomizeBuild(join(K8S, 'overlays', 'small')),
    'base + components/keda': withComponent(base, join(K8S, 'components', 'keda')),
    'base + components/hpa': withComponent(base, join(K8S, 'components', 'hpa')),
  };
}

interface Model {
  new (data: unknown): { validate(): void };
  prototype: { validate(this: unknown): void };
}

/** `apps/v1` + `Deployment` → the kubernetes-models module that validates it. */
function modelModule(apiVersion: string, kind: string): string {
  if (apiVersion.startsWith('keda.sh/')) return `@kubernetes-models/keda/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

async function loadModel(apiVersion: string, kind: string): Promise<Model> {
  const module = (await import(modelModule(apiVersion, kind))) as Record<string, Model>;
  const model = module[kind];
  if (!model) throw new Error(`no schema for ${apiVersion} ${kind}`);
  return model;
}

/** Wrap `value` so every property the validator reads is recorded: a field it never reads is not in the schema. */
function tracked(value: unknown, path: string, read: Set<string>): unknown {
  if (value === null || typeof value !== 'object') return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      const child = Reflect.get(target, key, receiver) as unknown;
      if (typeof key !== 'string' || !Object.hasOwn(target, key)) return child;
      read.add(`${path}/${key}`);
      return tracked(child, `${path}/${key}`, read);
    },
    has(target, key) {
      if (typeof key === 'string') read.add(`${path}/${key}`);
      return Reflect.has(target, key);
    },
  });
}

function fieldPaths(value: unknown, path: string, out: string[]): string[] {
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      out.push(`${path}/${key}`);
      fieldPaths(child, `${path}/${key}`, out);
    }
  }
  return out;
}

/**
 * Schema errors of one manifest, empty when it is valid. Strict like `kubectl apply --validate=strict`: a field the
 * schema does not define (a typo such as `readinesProbe`) is an error too. The validators do not reject unknown
 * fields themselves (the schemas allow them), so the check records which fields validation consulted.
 */
export async function schemaErrors(manifest: Manifest): Promise<string[]> {
  let model: Model;
  try {
    model = await loadModel(manifest.apiVersion, manifest.kind);
  } catch (error) {
    return [`no schema for ${manifest.apiVersion} ${manifest.kind}: ${(error as Error).message}`];
  }
  const errors: string[] = [];
  try {
    new model(structuredClone(manifest)).validate();
  } catch (error) {
    errors.push((error as Error).message);
  }
  const read = new Set<string>();
  try {
    model.prototype.validate.call(tracked(structuredClone(manifest), '', read));
  } catch {
    // Reported above; this pass only records which fields the schema knows.
  }
  const unknown: string[] = [];
  for (const path of fieldPaths(manifest, '', [])) {
    // Below an unknown field everything is unread; name the outermost one only.
    if (!read.has(path) && !unknown.some((outer) => path.startsWith(`${outer}/`))) unknown.push(path);
  }
  return [...errors, ...unknown.map((path) => `unknown field ${path}`)];
}

/** Every Prometheus query an autoscaler of any variant runs, with where it comes from. */
export function autoscalerQueries(): [string, string][] {
  const queries: [string, string][] = [];
  for (const [variant, manifests] of Object.entries(k8sVariants())) {
    for (const manifest of manifests.filter((m) => m.kind === 'ScaledObject')) {
      const triggers = (manifest.spec as { triggers: { type: string; metadata: { query?: string } }[] }).triggers;
      for (const trigger of triggers.filter((t) => t.type === 'prometheus')) {
        queries.push([`${variant}: ScaledObject/${manifest.metadata.name}`, trigger.metadata.query!]);
      }
    }
  }
  return queries;
}
