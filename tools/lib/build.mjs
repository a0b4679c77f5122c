/**
 * Knowing whether `dist/` reflects the sources, and rebuilding it when it does not.
 *
 * A successful build leaves a stamp file in dist/. The stamp, not the emitted files, is what sources are compared
 * with: tsc emits even when it reports errors, and then `tsc-alias` never runs, so fresh-looking output can still be
 * broken. Only a build that finished writes the stamp.
 */
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { UserFacingError } from './console.mjs';
import { run } from './processes.mjs';

const SOURCE_ROOTS = ['apps', 'libs', 'tools'];
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json'];
/** Files tsconfig.build.json leaves out of the build: editing them cannot make dist/ stale. */
const NOT_BUILT = [/\.(spec|medium-spec|e2e-spec)\.ts$/, /^libs\/testing\//, /\.m?js$/];

export function stampPath(root) {
  return join(root, 'dist', '.build-stamp');
}

/** Newest modification time (ms) among the files the build reads. */
export function newestSourceTime(root) {
  let newest = 0;
  const visit = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        visit(path);
      } else if (entry.isFile()) {
        const rel = relative(root, path).split('\\').join('/');
        if (NOT_BUILT.some((pattern) => pattern.test(rel))) continue;
        newest = Math.max(newest, statSync(path).mtimeMs);
      }
    }
  };
  for (const name of SOURCE_ROOTS) {
    const dir = join(root, name);
    if (existsSync(dir)) visit(dir);
  }
  for (const name of CONFIG_FILES) {
    const file = join(root, name);
    if (existsSync(file)) newest = Math.max(newest, statSync(file).mtimeMs);
  }
  return newest;
}

/** Why dist/ must be rebuilt, or undefined when it is up to date. */
export function staleReason(root) {
  if (!existsSync(join(root, 'dist'))) return 'dist/ is missing';
  const stamp = stampPath(root);
  if (!existsSync(stamp)) return 'dist/ has no record of a finished build';
  if (statSync(stamp).mtimeMs < newestSourceTime(root)) return 'sources changed since the last build';
  return undefined;
}

/**
 * `npm run build`, then the stamp. The stamp takes the time the build started: a source saved while tsc was
 * running may not be in dist/, so it must still count as newer.
 */
export async function build(root, { quiet = false } = {}) {
  const started = new Date();
  try {
    await run('npm', ['run', '--silent', 'build'], { cwd: root, quiet });
  } catch (error) {
    throw new UserFacingError(`the build failed (npm run build). ${error instanceof Error ? error.message : ''}`);
  }
  const stamp = stampPath(root);
  writeFileSync(stamp, `${started.toISOString()}\n`);
  utimesSync(stamp, started, started);
}
