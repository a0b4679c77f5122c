import type { EffectivePersona, PersonaPolicy } from './persona-policy.js';

/** The keys of a validated class instance that are set (its unset optional fields are own `undefined`s). */
function defined<T extends object>(value: T | undefined): Partial<T> {
  if (!value) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The persona as one group sees it: the group's overrides replace the base values field by field (lists are
 * replaced, not merged; `attention` is merged key by key). `null` (a private chat or the bot's own life line) gives the base persona.
 */
export function effectivePersona(policy: PersonaPolicy, groupId: string | null): EffectivePersona {
  const { groupOverrides, ...base } = policy;
  const override = groupId === null ? undefined : groupOverrides[groupId];
  if (!override) return { ...base };
  const { notes, ...rest } = override;
  const changed = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined));
  const effective: EffectivePersona = { ...base, ...changed };
  if (base.attention || override.attention) {
    const weights = { ...defined(base.attention?.weights), ...defined(override.attention?.weights) };
    effective.attention = { ...defined(base.attention), ...defined(override.attention), weights };
  }
  if (notes !== undefined) effective.groupNotes = notes;
  return effective;
}
