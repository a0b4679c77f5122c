import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { APP_NODE_FLAGS, type AppUnderTest } from '@app/testing';

const ROOT = join(import.meta.dirname, '../..');
const APPS = Object.keys(APP_NODE_FLAGS) as AppUnderTest[];

/** The node flags the image's entry point runs each app with: its `<app>) exec node <flags> …` lines, else none. */
function entrypointFlags(): Record<string, string[]> {
  const script = readFileSync(join(ROOT, 'deploy/docker-entrypoint.sh'), 'utf8');
  const flags: Record<string, string[]> = {};
  for (const [, app, args] of script.matchAll(/^\s*([\w-]+)\)\s+exec node ((?:--\S+\s+)*)"dist\/apps\/\$app/gm)) {
    flags[app!] = args!.trim().split(/\s+/).filter(Boolean);
  }
  return flags;
}

describe('every launcher starts an app with the same node flags', () => {
  it('the image, `npm run up` and the tests agree', async () => {
    const settings = (await import(join(ROOT, 'tools/lib/settings.mjs'))) as {
      APPS: { name: string; nodeFlags?: string[] }[];
    };
    const image = entrypointFlags();
    for (const app of APPS) {
      const up = settings.APPS.find((a) => a.name === app)?.nodeFlags ?? [];
      expect({ app, flags: image[app] ?? [] }).toEqual({ app, flags: [...APP_NODE_FLAGS[app]] });
      expect({ app, flags: up }).toEqual({ app, flags: [...APP_NODE_FLAGS[app]] });
    }
    // The entry point names an app's flags only where it has some.
    expect(Object.keys(image).sort()).toEqual(APPS.filter((app) => APP_NODE_FLAGS[app].length > 0).sort());
  });
});
