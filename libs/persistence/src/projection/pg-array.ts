/** Characters a quoted element of a Postgres array literal escapes with a backslash. */
const ARRAY_SPECIAL = /[\\"]/g;

function quoted(text: string): string {
  return text.includes('"') || text.includes('\\') ? `"${text.replace(ARRAY_SPECIAL, '\\$&')}"` : `"${text}"`;
}

/**
 * A one-dimensional array parameter as the array literal node-postgres would send for it (`{"a","b\"c",NULL}`),
 * built in one pass: pg's own conversion escapes each element with two regular-expression replacements and grows
 * the literal one element at a time, which made the projector's column arrays — JSON text for every jsonb cell —
 * the largest allocation of a projected batch (docs/adr/0042). Postgres reads the same text either way.
 *
 * Strings, finite or not numbers, booleans, bigints and null or undefined (`NULL`) only; `undefined` is returned for
 * any other element (a Date, an object, a nested array, a Buffer), and the caller passes the array itself, for pg to
 * convert as it always has.
 */
export function pgArrayLiteral(values: readonly unknown[]): string | undefined {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) parts[i] = 'NULL';
    else if (typeof value === 'string') parts[i] = quoted(value);
    else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
      parts[i] = `"${String(value)}"`;
    } else return undefined;
  }
  return `{${parts.join(',')}}`;
}

/** `values` as its array literal when `pgArrayLiteral` can write it, otherwise as it is (pg converts it). */
export function arrayParameter(values: readonly unknown[]): string | readonly unknown[] {
  return pgArrayLiteral(values) ?? values;
}
