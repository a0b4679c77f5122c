import { createHash } from 'node:crypto';
import pg from 'pg';
import { DataSource, type QueryRunner } from 'typeorm';
import { QunliError } from '@app/contracts';
import { dataSourceOptions, MIGRATIONS, MIGRATIONS_TABLE, type PostgresOptions } from './data-source.js';

/** Any number: all that matters is that every migrating process asks for the same one. */
const MIGRATION_LOCK = 7_311_542_901;

const SCHEMA_BEHIND_MESSAGE = 'database schema is behind: run `npm run migrate`';

const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EAI_AGAIN']);

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The database a URL names (`postgres://…/qunli` → `qunli`). */
export function databaseNameOf(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (name.length === 0) throw new QunliError('DB.BAD_URL', `DATABASE_URL names no database: ${redact(url)}`);
  return name;
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** `host:port/db` without credentials, for messages. */
export function redact(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  // pg reports a refused connection to a multi-address host as an AggregateError whose parts carry the code.
  const parts = (error as { errors?: unknown } | null)?.errors;
  return Array.isArray(parts) ? errorCode(parts[0]) : undefined;
}

/** Turn "could not connect" failures into `DB.UNREACHABLE` naming the server; anything else is returned as is. */
export function explainConnectionError(error: unknown, url: string): unknown {
  const code = errorCode(error);
  const where = redact(url);
  if (code !== undefined && NETWORK_ERRORS.has(code)) {
    return new QunliError('DB.UNREACHABLE', `cannot reach Postgres at ${where} (${code}): is it running?`, {
      database: where,
      code,
    });
  }
  if (code === '28P01' || code === '28000') {
    return new QunliError('DB.UNREACHABLE', `Postgres at ${where} refused the login: ${(error as Error).message}`, {
      database: where,
      code,
    });
  }
  if (code === '57P03') {
    return new QunliError('DB.UNREACHABLE', `Postgres at ${where} is starting up or shutting down`, {
      database: where,
      code,
    });
  }
  return error;
}

export function schemaBehind(details: Record<string, unknown>): QunliError {
  return new QunliError('DB.SCHEMA_BEHIND', SCHEMA_BEHIND_MESSAGE, details);
}

/** Migration names in code order. */
export function migrationNames(): string[] {
  return MIGRATIONS.map((Migration) => new Migration().name);
}

/** Migrations the code has and the database has not run, oldest first. Read-only: creates nothing. */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const [{ present }] = await dataSource.query<[{ present: boolean }]>(
    `SELECT to_regclass($1) IS NOT NULL AS present`,
    [MIGRATIONS_TABLE],
  );
  const executed = present
    ? new Set(
        (await dataSource.query<{ name: string }[]>(`SELECT name FROM ${quoteIdent(MIGRATIONS_TABLE)}`)).map(
          (row) => row.name,
        ),
      )
    : new Set<string>();
  return migrationNames().filter((name) => !executed.has(name));
}

/** Throws `DB.SCHEMA_BEHIND` when a migration is pending: an app never runs against a schema older than its code. */
export async function assertSchemaCurrent(dataSource: DataSource): Promise<void> {
  const pending = await pendingMigrations(dataSource);
  if (pending.length > 0) throw schemaBehind({ pending });
}

/** Create the database a URL names unless it exists (via the `postgres` maintenance database). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const name = databaseNameOf(url);
  const admin = new pg.Client({ connectionString: withDatabase(url, 'postgres'), connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (error) {
    throw explainConnectionError(error, url);
  }
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    try {
      await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
      return true;
    } catch (error) {
      // Another process created it between our look and our create: the outcome we wanted.
      if (errorCode(error) === '42P04') return false;
      throw error;
    }
  } finally {
    await admin.end();
  }
}

/**
 * Run pending migrations, each in its own transaction, under an advisory lock so two processes migrating at once
 * take turns. Returns the names of the migrations run.
 */
export async function migrate(url: string): Promise<string[]> {
  const dataSource = new DataSource(dataSourceOptions(url, { poolSize: 2 }));
  try {
    await dataSource.initialize();
  } catch (error) {
    throw explainConnectionError(error, url);
  }
  const lock: QueryRunner = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const ran = await dataSource.runMigrations({ transaction: 'each' });
    return ran.map((migration) => migration.name);
  } finally {
    // Closing the pool ends the lock's session, which releases the lock even when the migration failed.
    await lock.release();
    await dataSource.destroy();
  }
}

/**
 * A short hash of every migration's name and of the statements its `up()` issues (recorded, not run), so a
 * migrated copy of the schema (the test template) can tell whether it is current without connecting to it.
 */
export async function migrationFingerprint(): Promise<string> {
  const hash = createHash('sha256');
  for (const Migration of MIGRATIONS) {
    const migration = new Migration();
    const calls: string[] = [];
    const recorder = new Proxy(
      {},
      {
        get:
          (_target, method) =>
          (...args: unknown[]) => {
            calls.push(`${String(method)}(${JSON.stringify(args)})`);
            return Promise.resolve([]);
          },
      },
    ) as QueryRunner;
    await migration.up(recorder);
    hash.update(migration.name).update('\0').update(calls.join('\0')).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** Postgres "database does not exist". */
const UNDEFINED_DATABASE = '3D000';

/**
 * Open the pool and refuse to go on against a schema older than the code, or a database that was never created:
 * both are fixed by `npm run migrate`, so both say so.
 */
export async function openDataSource(options: PostgresOptions): Promise<DataSource> {
  const dataSource = new DataSource(options);
  try {
    await dataSource.initialize();
  } catch (error) {
    if ((error as { code?: unknown }).code === UNDEFINED_DATABASE) {
      throw schemaBehind({ database: databaseNameOf(options.url!), reason: 'the database does not exist' });
    }
    throw explainConnectionError(error, options.url!);
  }
  try {
    await assertSchemaCurrent(dataSource);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  await warmPool(dataSource, keptOpen(options));
  return dataSource;
}

/** The connections a pool keeps however long they idle (`extra.min`, see `dataSourceOptions`). */
function keptOpen(options: PostgresOptions): number {
  const min = (options.extra as { min?: unknown } | undefined)?.min;
  return typeof min === 'number' && min > 0 ? min : 0;
}

/**
 * Open `count` connections now, so that the first queries after start do not each pay for a connection: on a
 * loaded two-core machine one costs 13–35 ms and ten at once about 125 ms. A connection that cannot be opened
 * (Postgres at `max_connections`) is left to the pool to open when a query needs it; start does not fail for it.
 */
export async function warmPool(dataSource: DataSource, count: number): Promise<void> {
  if (count === 0) return;
  const pool = (dataSource.driver as unknown as { master?: pg.Pool & { options: { max: number } } }).master;
  if (!pool) return;
  // Never more than the pool holds: a connect past its size would wait for a release that never comes.
  const wanted = Math.min(count, pool.options.max);
  const opened = await Promise.allSettled(Array.from({ length: wanted }, () => pool.connect()));
  for (const outcome of opened) if (outcome.status === 'fulfilled') outcome.value.release();
}
