/**
 * qunli.example.yaml is the reference a person copies to qunli.yaml: it must name every setting, show the default
 * the runtime really uses, explain each one, and load without a complaint.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { QunliConfig, SETTING_NAMES, loadConfig } from '@app/platform';

const PATH = join(import.meta.dirname, '..', '..', 'qunli.example.yaml');
const TEXT = readFileSync(PATH, 'utf8');
const EXAMPLE = parse(TEXT) as Record<string, string | number | null>;
const DEFAULTS = new QunliConfig() as unknown as Record<string, string | number | undefined>;
/** The file's own path cannot sensibly be set inside the file. */
const NOT_IN_FILE = new Set(['QUNLI_CONFIG']);
/** Defaults computed at start (host name and pid), shown as empty. */
const COMPUTED = new Set(['QUNLI_INSTANCE_ID']);

describe('qunli.example.yaml', () => {
  it('names every setting the runtime knows, and nothing else', () => {
    const expected = [...SETTING_NAMES].filter((name) => !NOT_IN_FILE.has(name)).sort();
    expect(Object.keys(EXAMPLE).sort()).toEqual(expected);
  });

  it.each(Object.keys(EXAMPLE))('shows the real default of %s', (key) => {
    const shown = EXAMPLE[key];
    const actual = COMPUTED.has(key) ? undefined : DEFAULTS[key];
    expect(shown === null ? undefined : String(shown)).toEqual(actual === undefined ? undefined : String(actual));
  });

  it('explains every setting in a comment right above it', () => {
    const lines = TEXT.split('\n');
    const unexplained = Object.keys(EXAMPLE).filter((key) => {
      const at = lines.findIndex((line) => line.startsWith(`${key}:`));
      return !(lines[at - 1] ?? '').startsWith('# ');
    });
    expect(unexplained).toEqual([]);
  });

  it('loads as a configuration file without a complaint and changes nothing', () => {
    const config = loadConfig('tool', { env: { QUNLI_CONFIG: PATH } });
    for (const key of Object.keys(EXAMPLE)) {
      if (COMPUTED.has(key)) continue;
      expect({ key, value: (config as unknown as Record<string, unknown>)[key] }).toEqual({
        key,
        value: DEFAULTS[key],
      });
    }
  });
});
