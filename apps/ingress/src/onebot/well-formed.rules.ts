/**
 * Text with a lone UTF-16 surrogate (an emoji cut in half by an implementation, or a hostile `\ud800` escape) is
 * valid to JavaScript but not to anything downstream: Redis's Lua cjson and Postgres's json refuse it, and an
 * event they refuse would stall its group or never reach the read models. Ingress repairs such strings (each lone
 * surrogate becomes U+FFFD) before an event is made, and counts the repair.
 */

/** Deepest nesting repaired; accepted payloads are built by the normaliser and are far shallower. */
const MAX_DEPTH = 32;

export interface Repaired<T> {
  value: T;
  /** Strings that held a lone surrogate. */
  repaired: number;
}

export function wellFormed<T>(value: T): Repaired<T> {
  const counter = { repaired: 0 };
  return { value: repair(value, 0, counter) as T, repaired: counter.repaired };
}

function repair(value: unknown, depth: number, counter: { repaired: number }): unknown {
  if (typeof value === 'string') {
    if (value.isWellFormed()) return value;
    counter.repaired += 1;
    return value.toWellFormed();
  }
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const items = value as unknown[];
    let copy: unknown[] | undefined;
    items.forEach((item, i) => {
      const fixed = repair(item, depth + 1, counter);
      if (fixed !== item) (copy ??= [...items])[i] = fixed;
    });
    return copy ?? value;
  }
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const fixed = repair(item, depth + 1, counter);
    if (fixed !== item) (copy ??= { ...value })[key] = fixed;
  }
  return copy ?? value;
}
