import { SETTING_NAMES } from '@app/platform';

/**
 * The settings a harness gives the apps, minus the optional ones this build does not know: an app refuses an
 * unknown `QUNLI_*` variable, and the harness asks for knobs (send pacing, debounce…) that other branches add or
 * rename. Dropped names are reported so a reader of the figures knows what did not apply.
 */
export function knownSettings(
  required: Record<string, string>,
  optional: Record<string, string> = {},
): { env: Record<string, string>; dropped: string[] } {
  const env = { ...required };
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(optional)) {
    if (SETTING_NAMES.has(name)) env[name] = value;
    else dropped.push(name);
  }
  return { env, dropped };
}
