import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError, type ValidatorOptions } from 'class-validator';
import { parse as parseYaml } from 'yaml';
import { QunliError, type FieldError } from '@app/contracts';
import {
  minutesOfDay,
  PersonaGroupOverride,
  PersonaPolicy,
  type PersonaAttention,
  type RoutineActivity,
} from './persona-policy.js';

/** Unknown keys are errors: a typo (`curiousity`) must not silently fall back to nothing. */
const STRICT: ValidatorOptions = { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true };

const GROUP_ID = /^[0-9]{1,20}$/;

/** The persona file is missing or unreadable. */
export class PersonaNotFound extends QunliError {
  constructor(path: string, reason: string) {
    super('PERSONA.NOT_FOUND', `persona file ${path} could not be read: ${reason}`, { path });
  }
}

/** The persona file does not describe a valid policy; `fields` names every bad field at once. */
export class PersonaInvalid extends QunliError {
  constructor(
    readonly source: string,
    readonly fields: FieldError[],
  ) {
    super(
      'PERSONA.INVALID',
      `persona ${source} is invalid: ${fields.map((f) => (f.path ? `${f.path} ${f.message}` : f.message)).join('; ')}`,
      { source, fields },
    );
  }
}

/** Read and validate a persona policy from a YAML file. Throws `PERSONA.NOT_FOUND` or `PERSONA.INVALID`. */
export function loadPersona(path: string): PersonaPolicy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new PersonaNotFound(path, (error as Error).message);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new PersonaInvalid(path, [{ path: '', message: `is not valid YAML: ${(error as Error).message}` }]);
  }
  return parsePersona(raw, path);
}

/** Validate an already-parsed persona (from YAML, JSON or a test). `source` names it in errors. */
export function parsePersona(raw: unknown, source = 'persona'): PersonaPolicy {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new PersonaInvalid(source, [{ path: '', message: 'must be a mapping of persona fields' }]);
  }
  const policy = plainToInstance(PersonaPolicy, raw, { exposeDefaultValues: true });
  const fields = flatten(validateSync(policy, STRICT));

  const overrides = (raw as { groupOverrides?: unknown }).groupOverrides;
  if (overrides !== undefined && overrides !== null && typeof overrides === 'object' && !Array.isArray(overrides)) {
    policy.groupOverrides = {};
    for (const [groupId, value] of Object.entries(overrides as Record<string, unknown>)) {
      const path = `groupOverrides.${groupId}`;
      if (!GROUP_ID.test(groupId)) fields.push({ path, message: 'key must be a QQ group id (digits)' });
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        fields.push({ path, message: 'must be a mapping of overridden fields' });
        continue;
      }
      const override = plainToInstance(PersonaGroupOverride, value);
      fields.push(...flatten(validateSync(override, STRICT), path));
      policy.groupOverrides[groupId] = override;
    }
  } else if (overrides === null) {
    policy.groupOverrides = {};
  }

  if (typeof policy.timezone === 'string' && !isTimeZone(policy.timezone)) {
    fields.push({ path: 'timezone', message: `must be an IANA time zone such as Asia/Shanghai` });
  }
  if (Array.isArray(policy.routine) && !fields.some((f) => f.path.startsWith('routine'))) {
    fields.push(...routineProblems(policy.routine));
  }

  fields.push(...thresholdProblems(policy.attention, 'attention'));
  for (const [groupId, override] of Object.entries(policy.groupOverrides ?? {})) {
    const merged = {
      high: override.attention?.high ?? policy.attention?.high,
      middle: override.attention?.middle ?? policy.attention?.middle,
    };
    if (override.attention) fields.push(...thresholdProblems(merged, `groupOverrides.${groupId}.attention`));
  }

  if (fields.length > 0) throw new PersonaInvalid(source, fields);
  return policy;
}

/** A middle score above the high one would snooze what it should deliberate. */
function thresholdProblems(
  attention: Pick<PersonaAttention, 'high' | 'middle'> | undefined,
  path: string,
): FieldError[] {
  const { high, middle } = attention ?? {};
  if (typeof high === 'number' && typeof middle === 'number' && middle > high) {
    return [{ path: `${path}.middle`, message: `must not exceed high (${high})` }];
  }
  return [];
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The routine is one day: activities may not overlap (also across midnight), so "what now" has one answer. */
function routineProblems(routine: RoutineActivity[]): FieldError[] {
  const problems: FieldError[] = [];
  const total = routine.reduce((sum, a) => sum + a.durationMinutes, 0);
  if (total > 1440) {
    problems.push({ path: 'routine', message: `activities add up to ${total} minutes, more than one day (1440)` });
    return problems;
  }
  const order = routine.map((activity, index) => ({ activity, index, start: minutesOfDay(activity.at) }));
  order.sort((a, b) => a.start - b.start);
  if (order.length < 2) return problems;
  order.forEach((current, i) => {
    const next = order[(i + 1) % order.length]!;
    const end = current.start + current.activity.durationMinutes;
    const nextStart = next.start + (i + 1 === order.length ? 1440 : 0);
    if (end > nextStart) {
      problems.push({
        path: `routine.${current.index}.durationMinutes`,
        message: `runs until ${clock(end)}, past the start of routine.${next.index} (${next.activity.at})`,
      });
    }
  });
  return problems;
}

function clock(minutes: number): string {
  const m = minutes % 1440;
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
}

function flatten(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const path = prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints) out.push({ path, message: Object.values(error.constraints).join(', ') });
    if (error.children?.length) out.push(...flatten(error.children, path));
  }
  return out;
}
