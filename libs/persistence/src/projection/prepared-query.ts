import { createHash } from 'node:crypto';
import { QueryFailedError, type EntityManager } from 'typeorm';

/** The part of node-postgres' client a named statement needs. */
interface PgClient {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

const names = new Map<string, string>();

/**
 * The name a statement is prepared under: derived from its text, so two texts never share one, and the same text
 * has the same name on every connection.
 */
export function statementName(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) {
    name = `qunli_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    names.set(sql, name);
  }
  return name;
}

/**
 * Runs one of the projector's statements as a named prepared statement on the transaction's connection (ADR 0053).
 * node-postgres sends its text on a connection once and afterwards only its parameters; Postgres parses and analyses
 * it once per connection and, from the sixth run on, reuses one generic plan. Sent unnamed, every batch paid all of
 * that for every statement. Rows come back as `manager.query` returns them for an INSERT or a SELECT, and a failure
 * is the same `QueryFailedError`. Without a transaction's connection the statement goes unnamed through `manager`.
 *
 * Only for statements whose text is fixed for the life of the process (built from constants and entity metadata),
 * and whose plan does not depend on the values bound: each distinct text stays prepared on each pooled connection
 * until it closes, and its generic plan serves every batch.
 */
export async function preparedQuery<T>(manager: EntityManager, sql: string, params: unknown[]): Promise<T> {
  const runner = manager.queryRunner;
  if (!runner || runner.isReleased) return manager.query<T>(sql, params);
  const client = (await runner.connect()) as PgClient;
  try {
    return (await client.query({ name: statementName(sql), text: sql, values: params })).rows as T;
  } catch (error) {
    throw new QueryFailedError(sql, params, error as Error);
  }
}
