/**
 * Readers for the loose shapes OneBot implementations send (QUIRKS.md): ids as numbers or digit strings, times as
 * numbers or strings, data values of any JSON type. A bad field throws `Rejection` naming its path; the
 * normaliser turns that into a structured refusal.
 */

export const REJECT_REASONS = [
  'bad_json',
  'invalid_payload',
  'unauthorized',
  'bad_signature',
  'bad_role',
  'too_large',
  'too_many_segments',
  'text_too_long',
  'self_id_mismatch',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export interface PayloadProblem {
  /** Path of the offending field: `group_id`, `message[2].type`, `$` for the whole input. */
  field: string;
  message: string;
  /** Metric label: `invalid_payload` unless a limit was exceeded. */
  reason: RejectReason;
}

export class Rejection extends Error {
  constructor(readonly problem: PayloadProblem) {
    super(`${problem.field}: ${problem.message}`);
  }
}

export function reject(field: string, message: string, reason: RejectReason = 'invalid_payload'): never {
  throw new Rejection({ field, message, reason });
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function shown(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? 'nothing' : (JSON.stringify(value) ?? typeof value);
  } catch {
    text = typeof value;
  }
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/** A QQ id or message id: an integer or a string of digits. `message_id` may be negative (NapCat int32). */
export function readId(record: Record<string, unknown>, field: string, path = field, signed = false): string {
  const value = record[field];
  if (typeof value === 'number' && Number.isSafeInteger(value) && (signed || value >= 0)) return String(value);
  if (typeof value === 'string' && (signed ? /^-?[0-9]{1,20}$/ : /^[0-9]{1,20}$/).test(value)) return value;
  return reject(
    path,
    `must be ${signed ? 'an' : 'a non-negative'} integer or a string of digits (got ${shown(value)})`,
  );
}

/** An id that may be absent; `0` (NapCat's "nobody", e.g. `operator_id: 0`) counts as absent. */
export function optionalId(record: Record<string, unknown>, field: string): string | undefined {
  const value = record[field];
  if (value === undefined || value === null) return undefined;
  const id = readId(record, field);
  return id === '0' ? undefined : id;
}

export function readTime(record: Record<string, unknown>): number {
  const value = record.time;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  if (typeof value === 'string' && /^[0-9]{1,12}$/.test(value)) return Number(value);
  return reject('time', `must be an integer of epoch seconds (got ${shown(value)})`);
}

export function optionalText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

/** Every data value becomes a string: numbers and booleans as written, objects as JSON, null as empty. */
export function stringValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return '';
  return JSON.stringify(value) ?? '';
}

/** A short string field (`sub_type`, `notice_type`), or undefined. */
export function optionalWord(record: Record<string, unknown>, field: string, max = 64): string | undefined {
  const value = record[field];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || value.length > max) {
    return reject(field, `must be a string of at most ${max} characters (got ${shown(value)})`);
  }
  return value;
}
