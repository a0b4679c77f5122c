import { tmpdir } from 'node:os';
import { TEST_REDIS_URL } from './redis.js';
import { loadConfig, type AppName, type QunliConfig } from '@app/platform';

/** A validated config from exactly these settings: no process environment, no qunli.yaml. */
export function testConfig(app: AppName, env: Record<string, string | number>): QunliConfig {
  // The tests' Redis (a Redis Cluster in the `cluster` tier) unless the test names another. No heap steward (ADR
  // 0035): the apps a test builds share the test runner's heap, and each steward would collect it.
  const plain = Object.fromEntries(
    Object.entries({ REDIS_URL: TEST_REDIS_URL, QUNLI_HEAP_COMPACT_QUIET_MS: 0, ...env }).map(([k, v]) => [
      k,
      String(v),
    ]),
  );
  return loadConfig(app, { env: plain, cwd: tmpdir() });
}
