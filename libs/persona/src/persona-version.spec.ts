import { join } from 'node:path';
import { canonicalJson, loadPersona, personaVersionOf } from './index.js';

const DEFAULT_PATH = join(import.meta.dirname, '../../../personas/default.yaml');

describe('persona version', () => {
  it('is the same for the same policy whatever the key order, and changes with any field', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    const policy = loadPersona(DEFAULT_PATH);
    const again = loadPersona(DEFAULT_PATH);
    expect(personaVersionOf(policy)).toMatch(/^[0-9a-f]{16}$/);
    expect(personaVersionOf(again)).toBe(personaVersionOf(policy));
    expect(personaVersionOf({ ...policy, curiosity: 0.1 })).not.toBe(personaVersionOf(policy));
  });
});
