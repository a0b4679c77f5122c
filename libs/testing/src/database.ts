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
export const TEMPLATE_DATABASE = 'qunli_test_template';

const TEST_DATABASE_PREFIX = 'qunli_t_';
const BUILD_PREFIX = `${TEMPLATE_DATABASE}_build_`;
/** Serialises template builds across concurrent test runs on one server. */
const TEMPLATE_LOCK = 7_311_542_902;
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

async function templateComment(admin: pg.Client): Promise<string | null> {
  const { rows } = await admin.query<{ comment: string | null }>(
    `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1`,
    [TEMPLATE_DATABASE],
  );
  return rows[0]?.comment ?? null;
}

/**
 * Make sure `qunli_test_template` holds the schema the code's migrations describe. The template carries a
 * fingerprint of the migrations in its comment; only when it differs (or the template is missing) is a new one
 * built, under an advisory lock, in a scratch database that is renamed into place when complete — so a clone
 * never sees a half-migrated template, and concurrent runs build it once.
 */
export async function ensureTemplateDatabase(): Promise<'current' | 'rebuilt'> {
  const expected = `qunli migrations ${await migrationFingerprint()}`;
  return withAdmin(async (admin) => {
    if ((await templateComment(admin)) === expected) return 'current';
    await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      if ((await templateComment(admin)) === expected) return 'current';
      const { rows: leftovers } = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`,
        [BUILD_PREFIX],
      );
      for (const { datname } of leftovers) await admin.query(`DROP DATABASE ${quoteIdent(datname)} WITH (FORCE)`);
      const build = `${BUILD_PREFIX}${randomBytes(4).toString('hex')}`;
      await admin.query(`CREATE DATABASE ${quoteIdent(build)}`);
      await migrate(withDatabase(TEST_DATABASE_ADMIN_URL, build));
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(TEMPLATE_DATABASE)}`);
      await admin.query(`ALTER DATABASE ${quoteIdent(build)} RENAME TO ${quoteIdent(TEMPLATE_DATABASE)}`);
      await admin.query(`COMMENT ON DATABASE ${quoteIdent(TEMPLATE_DATABASE)} IS ${literal(expected)}`);
      // Nobody may connect to the template: a connection would make every clone fail.
      await admin.query(`ALTER DATABASE ${quoteIdent(TEMPLATE_DATABASE)} WITH ALLOW_CONNECTIONS false`);
      return 'rebuilt';
    } finally {
      await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
  });
}

function testDatabaseName(label: string): string {
  const clean = label.toLowerCase().replace(/[^a-z0-9]+/g, '_');
  return `${TEST_DATABASE_PREFIX}${Date.now().toString(36)}_${randomBytes(3).toString('hex')}_${clean}`.slice(0, 63);
}

let templateChecked: Promise<unknown> | undefined;

/**
 * A database of its own for one test file: a clone of the migrated template (or an empty one). The template is
 * checked (one query) and, when the migrations changed, rebuilt once per run, whichever file comes first.
 * Names are `qunli_t_<base36 ms>_<random>_<label>`; the medium global setup drops ones older than 12 hours.
 */
export async function createTestDatabase(label: string, options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  if (!options.empty) await (templateChecked ??= ensureTemplateDatabase());
  const name = testDatabaseName(label);
  const template = options.empty ? '' : ` TEMPLATE ${quoteIdent(TEMPLATE_DATABASE)}`;
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
