import { tmpdir } from 'node:os';
import { loadConfig, type AppName, type QunliConfig } from '@app/platform';

/** A validated config from exactly these settings: no process environment, no qunli.yaml. */
export function testConfig(app: AppName, env: Record<string, string | number>): QunliConfig {
  const plain = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)]));
  return loadConfig(app, { env: plain, cwd: tmpdir() });
}
