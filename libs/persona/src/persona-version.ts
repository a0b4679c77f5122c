import { createHash } from 'node:crypto';
import type { PersonaPolicy } from './persona-policy.js';

/** JSON with keys sorted at every level, so equal policies give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The policy's content version: sha256 of its canonical JSON, first 16 hex digits (`personas.version`). */
export function personaVersionOf(policy: PersonaPolicy): string {
  return createHash('sha256').update(canonicalJson(policy)).digest('hex').slice(0, 16);
}
