import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { migrate, migrationFingerprint, quoteIdent, redact, withDatabase } from '@app/persistence';

/**
 * Medium tests get a database each, cloned from a migrated template (`CREATE DATABASE x TEMPLATE y`): a clone takes
 * milliseconds, where migrating a fresh database per file would not, and files never see each other's rows.
 */

/** The server medium tests use, as a superuser-ish role that may create databases. */
export const TEST_DATABASE_ADMIN_URL = adminUrl(
  process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
);
/**
 * Templates are named after the migrations' fingerprint (`qunli_test_tpl_<hash>`), so checkouts with different
 * migrations (branches, worktrees, CI beside a developer) each clone their own and never rebuild each other's.
 */
export const TEMPLATE_PREFIX = 'qunli_test_tpl_';

const TEST_DATABASE_PREFIX = 'qunli_t_';
/** Serialises template builds across concurrent test runs on one server. */
const TEMPLATE_LOCK = 7_311_542_902;
/** Templates of other fingerprints not built within this long are dropped when a new one is built. */
const TEMPLATE_STALE_MS = 2 * 86_400_000;
const OBJECT_IN_USE = '55006';

export interface TestDatabase {
  name: string;
  url: string;
  /** Terminate every connection to it and drop it. */
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** An empty database (no tables, no migrations run) instead of a clone of the template. */
  empty?: boolean;
}

function adminUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '' || parsed.pathname === '/') parsed.pathname = '/postgres';
  return parsed.toString();
}

function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

async function withAdmin<T>(work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: TEST_DATABASE_ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `medium tests need Postgres at ${redact(TEST_DATABASE_ADMIN_URL)} (set TEST_DATABASE_ADMIN_URL to use another): ${(error as Error).message}`,
      { cause: error },
    );
  }
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

async function databaseExists(admin: pg.Client, name: string): Promise<boolean> {
  const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return (rowCount ?? 0) > 0;
}

async function templateName(): Promise<string> {
  return `${TEMPLATE_PREFIX}${(await migrationFingerprint()).slice(0, 16)}`;
}

/**
 * Make sure the template for the code's migrations exists. It is built only when missing, under an advisory lock,
 * in a scratch database that is renamed into place when complete — so a clone never sees a half-migrated template,
 * and concurrent runs build it once. Building one also drops templates of other fingerprints left unused.
 */
export async function ensureTemplateDatabase(): Promise<{ template: string; built: boolean }> {
  const template = await templateName();
  const build = `${template}_b${randomBytes(3).toString('hex')}`.slice(0, 63);
  return withAdmin(async (admin) => {
    if (await databaseExists(admin, template)) return { template, built: false };
    await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      if (await databaseExists(admin, template)) return { template, built: false };
      const { rows } = await admin.query<{ datname: string; comment: string | null }>(
        `SELECT datname, shobj_description(oid, 'pg_database') AS comment FROM pg_database
          WHERE starts_with(datname, $1) OR datname = 'qunli_test_template'`,
        [TEMPLATE_PREFIX],
      );
      for (const { datname, comment } of rows) {
        const builtAt = Date.parse(comment?.replace(/^built /, '') ?? '');
        const scratch = datname.startsWith(TEMPLATE_PREFIX) && /_b[0-9a-f]{6}$/.test(datname);
        if (!scratch && !Number.isNaN(builtAt) && Date.now() - builtAt < TEMPLATE_STALE_MS) continue;
        await admin.query(`ALTER DATABASE ${quoteIdent(datname)} WITH IS_TEMPLATE false ALLOW_CONNECTIONS true`);
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(datname)} WITH (FORCE)`);
      }
      await admin.query(`CREATE DATABASE ${quoteIdent(build)}`);
      await migrate(withDatabase(TEST_DATABASE_ADMIN_URL, build));
      await admin.query(`ALTER DATABASE ${quoteIdent(build)} RENAME TO ${quoteIdent(template)}`);
      await admin.query(
        `COMMENT ON DATABASE ${quoteIdent(template)} IS ${literal(`built ${new Date().toISOString()}`)}`,
      );
      // Nobody may connect to the template: a connection would make every clone fail.
      await admin.query(`ALTER DATABASE ${quoteIdent(template)} WITH ALLOW_CONNECTIONS false`);
      return { template, built: true };
    } finally {
      await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
  });
}

function testDatabaseName(label: string): string {
  const clean = label.toLowerCase().replace(/[^a-z0-9]+/g, '_');
  return `${TEST_DATABASE_PREFIX}${Date.now().toString(36)}_${randomBytes(3).toString('hex')}_${clean}`.slice(0, 63);
}

let templateChecked: Promise<{ template: string }> | undefined;

/**
 * A database of its own for one test file: a clone of the migrated template (or an empty one). The template is
 * checked (one query) and, when the migrations changed, rebuilt once per run, whichever file comes first.
 * Names are `qunli_t_<base36 ms>_<random>_<label>`; the medium global setup drops ones older than 12 hours.
 */
export async function createTestDatabase(label: string, options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const name = testDatabaseName(label);
  const template = options.empty
    ? ''
    : ` TEMPLATE ${quoteIdent((await (templateChecked ??= ensureTemplateDatabase())).template)}`;
  await withAdmin(async (admin) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${quoteIdent(name)}${template}`);
        return;
      } catch (error) {
        // The template is briefly "being accessed" while a concurrent run swaps in a rebuilt one.
        if ((error as { code?: string }).code !== OBJECT_IN_USE || attempt >= 20) throw error;
        await delay(100 * attempt);
      }
    }
  });
  return {
    name,
    url: withDatabase(TEST_DATABASE_ADMIN_URL, name),
    drop: () =>
      withAdmin(async (admin) => {
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      }),
  };
}
