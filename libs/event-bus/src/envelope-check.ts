import { getMetadataStorage, type ValidationArguments } from 'class-validator';
import { EventEnvelope, PAYLOAD_CLASSES, envelopeErrors, type FieldError } from '@app/contracts';
// class-transformer keeps `@Type` in this storage; it has no public accessor.
// eslint-disable-next-line @typescript-eslint/ban-ts-comment
// @ts-ignore -- untyped deep import of a CommonJS module
import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import { sealEnvelope } from './entry-seal.js';

/**
 * A fast yes/no check of an envelope against the contracts' class-validator rules, run before (and usually instead
 * of) `envelopeErrors` on the bus's writes. class-validator stays the source of truth: this runs the *same*
 * constraint instances class-validator registered for each class (every `@IsString`, `@MaxLength`, `@IsIn` … is a
 * constraint object with a `validate` function), over a plan built once per class, without class-transformer's
 * copy of the object, the per-call metadata lookups and the error objects. It may only say "valid" when
 * class-validator would: whenever it meets something it does not model (groups, `validateIf`, async or unknown
 * constraint kinds, a nested property without a plain `@Type`, a class with no rules) it says "not valid", and the
 * caller asks class-validator, which then decides and names the fields (docs/adr/0022).
 */

interface Metadata {
  type: string;
  propertyName: string;
  constraints?: unknown[];
  constraintCls?: unknown;
  each?: boolean;
  validateIf?: unknown;
  groups?: string[];
  always?: boolean;
}

interface Constraint {
  async?: boolean;
  instance: { validate(value: unknown, args: ValidationArguments): unknown };
}

interface PropertyPlan {
  name: string;
  /** `@IsOptional`-like conditions: when one is false, the property is not checked at all. */
  conditions: ((object: unknown, value: unknown) => boolean)[];
  checks: { each: boolean; constraints: unknown[]; validate: Constraint['instance']['validate'] }[];
  /** `@ValidateNested` with its `@Type`. */
  nested: Plan | 'unresolved' | undefined;
}

interface Plan {
  properties: PropertyPlan[];
  /** Set when the class turned out to have rules this check does not model (a nested reference may hold it). */
  unsupported?: true;
}

interface TypeMetadata {
  typeFunction(): unknown;
  options?: { discriminator?: unknown };
}

const typeStorage = defaultMetadataStorage as {
  findTypeMetadata(target: unknown, property: string): TypeMetadata | undefined;
};

const plans = new Map<unknown, Plan | null>();

/** The plan of a class, or `null` when it has rules this check does not model. Built once per class. */
function planOf(target: new () => object): Plan | null {
  const known = plans.get(target);
  if (known !== undefined) return known;
  // A placeholder first: a class nested in itself (a forward's nodes) resolves to the plan being built.
  const plan: Plan = { properties: [] };
  plans.set(target, plan);
  const storage = getMetadataStorage();
  const metadatas = storage.getTargetValidationMetadatas(target, '', false, false) as unknown as Metadata[];
  let supported = metadatas.length > 0;
  const byProperty = new Map<string, PropertyPlan>();
  for (const m of metadatas) {
    if (!supported) break;
    if (m.validateIf !== undefined || (m.groups?.length ?? 0) > 0 || m.always) supported = false;
    let property = byProperty.get(m.propertyName);
    if (!property) {
      property = { name: m.propertyName, conditions: [], checks: [], nested: undefined };
      byProperty.set(m.propertyName, property);
    }
    switch (m.type) {
      case 'conditionalValidation':
        property.conditions.push(m.constraints![0] as PropertyPlan['conditions'][number]);
        break;
      case 'customValidation':
        for (const constraint of storage.getTargetValidatorConstraints(m.constraintCls as never) as Constraint[]) {
          if (constraint.async) supported = false;
          property.checks.push({
            each: m.each === true,
            constraints: m.constraints ?? [],
            validate: constraint.instance.validate.bind(constraint.instance),
          });
        }
        break;
      case 'nestedValidation': {
        const type = typeStorage.findTypeMetadata(target, m.propertyName);
        const nestedClass = type && !type.options?.discriminator ? type.typeFunction() : undefined;
        property.nested =
          typeof nestedClass === 'function' ? (planOf(nestedClass as new () => object) ?? 'unresolved') : 'unresolved';
        break;
      }
      default:
        supported = false;
    }
  }
  if (!supported) {
    plan.unsupported = true;
    plans.set(target, null);
    return null;
  }
  plan.properties = [...byProperty.values()];
  return plan;
}

/** Keys class-transformer's copy would turn into a prototype change, which class-validator then judges otherwise. */
const hasOwn = Object.prototype.hasOwnProperty;

function holds(plan: Plan, object: Record<string, unknown>, targetName: string): boolean {
  if (plan.unsupported || hasOwn.call(object, '__proto__') || hasOwn.call(object, 'constructor')) return false;
  // One arguments object per call, refilled for each check: the constraints read it synchronously and keep
  // nothing, and a fresh object per property and check was the largest allocation of a bus write.
  const args: ValidationArguments = { targetName, property: '', object, value: undefined, constraints: [] };
  for (const property of plan.properties) {
    const value = object[property.name];
    let applies = true;
    for (const condition of property.conditions) {
      if (!condition(object, value)) {
        applies = false;
        break;
      }
    }
    if (!applies) continue;
    args.property = property.name;
    args.value = value;
    for (const check of property.checks) {
      args.constraints = check.constraints;
      if (check.each && Array.isArray(value)) {
        for (const item of value) if (check.validate(item, args) !== true) return false;
      } else if (check.validate(value, args) !== true) return false;
    }
    if (property.nested !== undefined) {
      if (property.nested === 'unresolved') return false;
      if (Array.isArray(value)) {
        for (const item of value) if (!holdsNested(property.nested, item, property.name)) return false;
      } else if (!holdsNested(property.nested, value, property.name)) return false;
    }
  }
  return true;
}

function holdsNested(plan: Plan, item: unknown, targetName: string): boolean {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  return holds(plan, item as Record<string, unknown>, targetName);
}

/**
 * `true` only if class-validator would find no error in `plain` as an instance of `target` (its own rules and what
 * they nest; a property with no rules, such as an envelope the caller checks itself, is not looked at).
 */
export function classHolds(target: new () => object, plain: unknown): boolean {
  const plan = planOf(target);
  return plan !== null && holdsNested(plan, plain, target.name);
}

/** `true` only if class-validator would find no error in this envelope (and its kind's payload). */
export function envelopeHolds(plain: unknown): boolean {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) return false;
  const envelope = plain as Record<string, unknown>;
  const envelopePlan = planOf(EventEnvelope);
  if (!envelopePlan || !holds(envelopePlan, envelope, 'EventEnvelope')) return false;
  const payloadClass = PAYLOAD_CLASSES[envelope.kind as keyof typeof PAYLOAD_CLASSES];
  const payloadPlan = payloadClass ? planOf(payloadClass) : null;
  const payload = envelope.payload;
  if (!payloadPlan || typeof payload !== 'object' || payload === null) return false;
  return holds(payloadPlan, payload as Record<string, unknown>, payloadClass.name);
}

/** The envelope's field errors: none when the fast check holds, otherwise class-validator's full answer. */
export function checkedEnvelopeErrors(plain: unknown): FieldError[] {
  return envelopeHolds(plain) ? [] : envelopeErrors(plain);
}

/**
 * An envelope serialised once (as text and as its UTF-8 bytes, what a script's argument should be: `wireArg`) for a
 * writer that stores it from a script of its own: sealed when it passes the write check, so no reader runs
 * class-validator on it; otherwise unsealed (`seal` empty), and every reader validates it in full and dead-letters
 * it if it is bad.
 */
export function sealIfValid(event: EventEnvelope): { json: string; bytes: Buffer; seal: string } {
  if (checkedEnvelopeErrors(event).length > 0) {
    const json = JSON.stringify(event);
    return { json, bytes: Buffer.from(json), seal: '' };
  }
  const { json, bytes, seal } = sealEnvelope(event);
  return { json, bytes, seal };
}
