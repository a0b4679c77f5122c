import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { parse, parseAllDocuments } from 'yaml';

/**
 * A kustomize-style composer for the manifests under deploy/, so the tests check what `kubectl apply -k` would
 * apply. npm has no maintained kustomize (the real one is a Go binary, and none can be downloaded here), so this
 * implements the subset deploy/ uses, with kustomize's semantics, and refuses any other field rather than silently
 * ignoring it:
 *   resources (files and kustomization directories), components, namespace, labels (pairs, includeSelectors,
 *   includeTemplates), images (name → newName/newTag), patches (RFC 6902 JSON patches with a kind/name target,
 *   applied with fast-json-patch), configMapGenerator (files, literals) with generatorOptions
 *   disableNameSuffixHash: true and labels.
 * Like kustomize it keeps file loads inside each kustomization's own directory (LoadRestrictionsRootOnly).
 */

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

interface LabelSet {
  pairs: Record<string, string>;
  includeSelectors?: boolean;
  includeTemplates?: boolean;
}

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
}

interface PatchRule {
  path?: string;
  patch?: string;
  target: { kind?: string; name?: string };
}

interface GeneratorRule {
  name: string;
  files?: string[];
  literals?: string[];
}

interface Kustomization {
  apiVersion: string;
  kind: 'Kustomization' | 'Component';
  namespace?: string;
  resources?: string[];
  components?: string[];
  labels?: LabelSet[];
  images?: ImageRule[];
  patches?: PatchRule[];
  configMapGenerator?: GeneratorRule[];
  generatorOptions?: { disableNameSuffixHash?: boolean; labels?: Record<string, string> };
}

const SUPPORTED = new Set([
  'apiVersion',
  'kind',
  'namespace',
  'resources',
  'components',
  'labels',
  'images',
  'patches',
  'configMapGenerator',
  'generatorOptions',
]);

/** Kinds that live outside any namespace (the namespace transformer leaves them alone). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
]);

export class KustomizeError extends Error {
  constructor(where: string, message: string) {
    super(`${where}: ${message}`);
    this.name = 'KustomizeError';
  }
}

function readKustomization(dir: string): Kustomization {
  const file = ['kustomization.yaml', 'kustomization.yml', 'Kustomization']
    .map((name) => join(dir, name))
    .find((path) => existsSync(path));
  if (!file) throw new KustomizeError(dir, 'no kustomization.yaml');
  const parsed = parse(readFileSync(file, 'utf8')) as Kustomization;
  const unsupported = Object.keys(parsed).filter((key) => !SUPPORTED.has(key));
  if (unsupported.length > 0)
    throw new KustomizeError(file, `fields this composer does not implement: ${unsupported.join(', ')}`);
  return parsed;
}

/** A file a kustomization loads must sit inside its directory, as kustomize's default load restrictor demands. */
function loadable(root: string, path: string): string {
  const full = resolve(root, path);
  if (relative(root, full).startsWith('..'))
    throw new KustomizeError(root, `${path} is outside the kustomization root`);
  return full;
}

function readManifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length > 0) throw new KustomizeError(file, doc.errors.map((e) => e.message).join('; '));
      return doc.toJS() as Manifest | null;
    })
    .filter((m): m is Manifest => m !== null);
}

/** Pod templates of the workload kinds, where images and template labels apply. */
function podTemplates(manifest: Manifest): PodTemplate[] {
  const spec = manifest.spec as { template?: PodTemplate; jobTemplate?: { spec?: { template?: PodTemplate } } };
  if (!spec) return [];
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(manifest.kind)) {
    return spec.template ? [spec.template] : [];
  }
  if (manifest.kind === 'CronJob') {
    const job = spec.jobTemplate?.spec?.template;
    return job ? [job] : [];
  }
  return [];
}

interface PodTemplate {
  metadata?: { labels?: Record<string, string> };
  spec?: PodSpec;
}

interface PodSpec {
  containers?: { image?: string }[];
  initContainers?: { image?: string }[];
}

function applyNamespace(manifests: Manifest[], namespace: string): void {
  for (const manifest of manifests) {
    if (!CLUSTER_SCOPED.has(manifest.kind)) manifest.metadata.namespace = namespace;
    if (manifest.kind === 'RoleBinding' || manifest.kind === 'ClusterRoleBinding') {
      for (const subject of (manifest.subjects as { kind: string; namespace?: string }[] | undefined) ?? []) {
        if (subject.kind === 'ServiceAccount') subject.namespace = namespace;
      }
    }
  }
}

function applyLabels(manifests: Manifest[], sets: LabelSet[], where: string): void {
  for (const set of sets) {
    if (set.includeSelectors) throw new KustomizeError(where, 'labels with includeSelectors: true are not implemented');
    for (const manifest of manifests) {
      manifest.metadata.labels = { ...manifest.metadata.labels, ...set.pairs };
      if (set.includeTemplates) {
        for (const template of podTemplates(manifest)) {
          template.metadata = { ...template.metadata, labels: { ...template.metadata?.labels, ...set.pairs } };
        }
      }
    }
  }
}

function imageName(image: string): string {
  const at = image.indexOf('@');
  const withoutDigest = at >= 0 ? image.slice(0, at) : image;
  const colon = withoutDigest.lastIndexOf(':');
  return colon > withoutDigest.lastIndexOf('/') ? withoutDigest.slice(0, colon) : withoutDigest;
}

function applyImages(manifests: Manifest[], rules: ImageRule[]): void {
  for (const manifest of manifests) {
    for (const template of podTemplates(manifest)) {
      for (const container of [...(template.spec?.containers ?? []), ...(template.spec?.initContainers ?? [])]) {
        const rule = rules.find((r) => container.image !== undefined && imageName(container.image) === r.name);
        if (!rule) continue;
        const image = container.image!;
        const tag = image.slice(imageName(image).length).replace(/^:/, '');
        const name = rule.newName ?? rule.name;
        const newTag = rule.newTag ?? tag;
        container.image = newTag === '' ? name : `${name}:${newTag}`;
      }
    }
  }
}

function applyPatches(manifests: Manifest[], rules: PatchRule[], root: string): void {
  for (const rule of rules) {
    const text = rule.patch ?? readFileSync(loadable(root, rule.path ?? ''), 'utf8');
    const operations = parse(text) as Operation[];
    if (!Array.isArray(operations)) {
      throw new KustomizeError(root, 'only RFC 6902 (JSON patch) patches are implemented, with a target');
    }
    const targets = manifests.filter(
      (m) =>
        (rule.target.kind === undefined || m.kind === rule.target.kind) &&
        (rule.target.name === undefined || m.metadata.name === rule.target.name),
    );
    if (targets.length === 0) throw new KustomizeError(root, `patch target ${JSON.stringify(rule.target)} not found`);
    for (const target of targets) {
      const patched = fastJsonPatch.applyPatch(target, operations, true, true).newDocument;
      Object.assign(target, patched);
    }
  }
}

function generateConfigMaps(kustomization: Kustomization, root: string): Manifest[] {
  const generators = kustomization.configMapGenerator ?? [];
  if (generators.length > 0 && kustomization.generatorOptions?.disableNameSuffixHash !== true) {
    // With the hash suffix kustomize also renames every reference to the ConfigMap; not implemented.
    throw new KustomizeError(root, 'configMapGenerator needs generatorOptions.disableNameSuffixHash: true');
  }
  return generators.map((generator) => {
    const data: Record<string, string> = {};
    for (const entry of generator.files ?? []) {
      const [key, path] = entry.includes('=') ? (entry.split('=', 2) as [string, string]) : [basename(entry), entry];
      if (key in data) throw new KustomizeError(root, `configMapGenerator ${generator.name}: key ${key} twice`);
      data[key] = readFileSync(loadable(root, path), 'utf8');
    }
    for (const literal of generator.literals ?? []) {
      const at = literal.indexOf('=');
      data[literal.slice(0, at)] = literal.slice(at + 1);
    }
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: generator.name, labels: { ...kustomization.generatorOptions?.labels } },
      data,
    };
  });
}

/** What `kustomize build <dir>` would print, as objects, in order. */
export function kustomizeBuild(dir: string): Manifest[] {
  const root = resolve(dir);
  const kustomization = readKustomization(root);
  const manifests: Manifest[] = [];
  for (const entry of kustomization.resources ?? []) {
    const path = resolve(root, entry);
    if (statSync(path).isDirectory()) {
      if (readKustomization(path).kind === 'Component') throw new KustomizeError(root, `${entry} is a Component`);
      manifests.push(...kustomizeBuild(path));
    } else {
      manifests.push(...readManifests(loadable(root, entry)));
    }
  }
  manifests.push(...generateConfigMaps(kustomization, root));
  for (const entry of kustomization.components ?? []) {
    manifests.push(...composeComponent(resolve(root, entry), manifests));
  }
  transform(manifests, kustomization, root);
  const seen = new Set<string>();
  for (const manifest of manifests) {
    const id = `${manifest.kind}/${manifest.metadata.namespace ?? ''}/${manifest.metadata.name}`;
    if (seen.has(id)) throw new KustomizeError(root, `${id} is defined twice`);
    seen.add(id);
  }
  return manifests;
}

/** `manifests` with a component added, as if a kustomization listed it under `components` (test variants). */
export function withComponent(manifests: Manifest[], dir: string): Manifest[] {
  const copy = structuredClone(manifests);
  return [...copy, ...composeComponent(resolve(dir), copy)];
}

/** A component adds its resources to its parent's, and its transformers apply to all of them. */
function composeComponent(dir: string, parent: Manifest[]): Manifest[] {
  const component = readKustomization(dir);
  if (component.kind !== 'Component') throw new KustomizeError(dir, 'listed under components but not a Component');
  const added: Manifest[] = [];
  for (const entry of component.resources ?? []) {
    const path = resolve(dir, entry);
    added.push(...(statSync(path).isDirectory() ? kustomizeBuild(path) : readManifests(loadable(dir, entry))));
  }
  added.push(...generateConfigMaps(component, dir));
  transform([...parent, ...added], component, dirname(join(dir, 'kustomization.yaml')));
  return added;
}

function transform(manifests: Manifest[], kustomization: Kustomization, root: string): void {
  if (kustomization.patches) applyPatches(manifests, kustomization.patches, root);
  if (kustomization.namespace) applyNamespace(manifests, kustomization.namespace);
  if (kustomization.labels) applyLabels(manifests, kustomization.labels, root);
  if (kustomization.images) applyImages(manifests, kustomization.images);
}
