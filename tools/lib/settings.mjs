/**
 * The few settings the developer tools need before anything is built, read the way the apps read them
 * (libs/platform/src/config.ts): defaults, then `qunli.yaml` (or the file QUNLI_CONFIG names), then the environment.
 * The apps still validate every setting themselves; this only decides where to look for Redis, Postgres and
 * the apps' HTTP ports.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { UserFacingError } from './console.mjs';

/** The five apps, their port setting and its default (the operating contract in ARCHITECTURE.md). */
export const APPS = [
  { name: 'ingress', portSetting: 'INGRESS_PORT', defaultPort: 8080 },
  // Node flags: the same as the image's entry point and the tests' (libs/testing `APP_NODE_FLAGS`).
  { name: 'scheduler', portSetting: 'SCHEDULER_PORT', defaultPort: 8081, nodeFlags: ['--max-semi-space-size=64'] },
  { name: 'cognition', portSetting: 'COGNITION_PORT', defaultPort: 8082 },
  { name: 'outbound', portSetting: 'OUTBOUND_PORT', defaultPort: 8083 },
  { name: 'life-director', portSetting: 'LIFE_DIRECTOR_PORT', defaultPort: 8084 },
];

export const DEFAULTS = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/qunli',
  QUNLI_HTTP_HOST: '0.0.0.0',
  ...Object.fromEntries(APPS.map((app) => [app.portSetting, String(app.defaultPort)])),
};

async function readConfigFile(path) {
  const { parse } = await import('yaml');
  let parsed;
  try {
    parsed = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UserFacingError(`${path} could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UserFacingError(`${path} must hold a mapping of SETTING: value`);
  }
  return parsed;
}

/** Merged settings as text, keyed by setting name; unset optional settings are absent. */
export async function readSettings(root, env = process.env) {
  const settings = { ...DEFAULTS };
  const file = env.QUNLI_CONFIG ?? join(root, 'qunli.yaml');
  if (existsSync(file)) {
    for (const [key, value] of Object.entries(await readConfigFile(file))) {
      if (value !== null && value !== undefined) settings[key] = String(value);
    }
  } else if (env.QUNLI_CONFIG !== undefined) {
    throw new UserFacingError(`QUNLI_CONFIG points at ${file}, which does not exist`);
  }
  for (const [key, value] of Object.entries(env)) {
    // Empty values count as unset, as in loadConfig.
    if (value !== undefined && value !== '') settings[key] = value;
  }
  return settings;
}

export function portOf(settings, app) {
  const port = Number(settings[app.portSetting]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UserFacingError(`${app.portSetting} must be a port number (got ${settings[app.portSetting]})`);
  }
  return port;
}
