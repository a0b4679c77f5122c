import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { flattenValidationErrors } from '@app/contracts';

/** Validate a model's tool arguments against a class-validator class: the value, or every field error. */
export function validateArgs<A extends object>(
  cls: new () => A,
  args: unknown,
): { ok: true; value: A } | { ok: false; errors: string[] } {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return { ok: false, errors: ['arguments must be an object'] };
  }
  const value = plainToInstance(cls, args);
  const errors = flattenValidationErrors(
    validateSync(value, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true }),
  );
  return errors.length > 0 ? { ok: false, errors: errors.map((e) => `${e.path} ${e.message}`) } : { ok: true, value };
}

export const MEMORY_TOOL_DEFAULTS = {
  permission: 'member',
  timeoutMs: 5000,
  sideEffect: false,
  idempotent: true,
  maxResultChars: 1500,
  maxRetries: 1,
  requiresConfirmation: false,
  source: 'memory',
} as const;
