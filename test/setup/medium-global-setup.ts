import pg from 'pg';

/*
 * Before the medium tests: check that Postgres answers (one clear message instead of every file failing) and drop
 * test databases that crashed runs left behind.
 *
 * The migrated template the test databases are cloned from is built by `createTestDatabase` (libs/testing), on
 * first use, under an advisory lock and only when the migrations changed. It cannot be built here: Jest loads a
 * global setup outside its module system, where neither the `@app/*` aliases nor NodeNext's `./x.js` → `./x.ts`
 * mapping resolve, so this file cannot import the migrations; a copy of them would drift.
 */

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Must match `createTestDatabase`'s naming: `qunli_t_<base36 creation ms>_…`. */
const TEST_DATABASE_PREFIX = 'qunli_t_';
const STALE_AFTER_MS = 12 * 60 * 60_000;

function where(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}`;
}

export default async function setup(): Promise<void> {
  const url = new URL(ADMIN_URL);
  if (url.pathname === '' || url.pathname === '/') url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `medium tests need Postgres at ${where(ADMIN_URL)} (set TEST_DATABASE_ADMIN_URL to use another): ${(error as Error).message}`,
      { cause: error },
    );
  }
  try {
    const { rows } = await admin.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
      [TEST_DATABASE_PREFIX],
    );
    for (const { datname } of rows) {
      const born = parseInt(datname.slice(TEST_DATABASE_PREFIX.length).split('_')[0] ?? '', 36);
      if (Number.isNaN(born) || Date.now() - born < STALE_AFTER_MS) continue;
      await admin.query(`DROP DATABASE IF EXISTS "${datname.replace(/"/g, '""')}" WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}
