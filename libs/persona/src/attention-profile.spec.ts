import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { QunliError } from '@app/contracts';
import { attentionProfile, parsePersona } from './index.js';

const DEFAULT_PATH = join(import.meta.dirname, '../../../personas/default.yaml');
const raw = () => parseYaml(readFileSync(DEFAULT_PATH, 'utf8')) as Record<string, unknown>;

function invalidPaths(value: unknown): string[] {
  try {
    parsePersona(value, 'test');
  } catch (error) {
    expect((error as QunliError).code).toBe('PERSONA.INVALID');
    return ((error as QunliError).details.fields as { path: string }[]).map((f) => f.path);
  }
  throw new Error('expected PERSONA.INVALID');
}

describe('attention profile from the persona', () => {
  it('maps the persona’s numbers to weights and thresholds (ADR-0018)', () => {
    const p = attentionProfile(parsePersona(raw()), null);
    expect(p).toMatchObject({ high: 0.67, middle: 0.42, snoozeMs: 42_000, budget: 3, cooldownMs: 75_000 });
    expect(p.talkValue).toBe(0.45);
    expect(p.weights).toMatchObject({ interest: 0.36, continuity: 0.575, obligation: 0.345, question: 0.2 });
  });

  it('an eager persona has a lower bar, a bigger budget and a shorter cooldown than a shy one', () => {
    const eager = attentionProfile(parsePersona({ ...raw(), participationBias: 0.9 }), null);
    const shy = attentionProfile(parsePersona({ ...raw(), participationBias: 0.1 }), null);
    expect(eager.high).toBeLessThan(shy.high);
    expect(eager.budget).toBeGreaterThan(shy.budget);
    expect(eager.cooldownMs).toBeLessThan(shy.cooldownMs);
  });

  it('the attention block overrides, and a group override merges over it key by key', () => {
    const persona = parsePersona({
      ...raw(),
      attention: { high: 0.8, weights: { interest: 0.5 } },
      groupOverrides: { '123': { attention: { onlyWhenCalled: true, weights: { question: 0.1 } } } },
    });
    expect(attentionProfile(persona, null)).toMatchObject({ high: 0.8, onlyWhenCalled: false });
    const group = attentionProfile(persona, '123');
    expect(group).toMatchObject({ high: 0.8, onlyWhenCalled: true });
    expect(group.weights).toMatchObject({ interest: 0.5, question: 0.1 });
  });

  it('invalid attention settings name their key', () => {
    expect(invalidPaths({ ...raw(), attention: { high: 1.5 } })).toEqual(['attention.high']);
    expect(invalidPaths({ ...raw(), attention: { weights: { intrest: 0.2 } } })).toEqual(['attention.weights.intrest']);
    expect(invalidPaths({ ...raw(), attention: { high: 0.4, middle: 0.6 } })).toEqual(['attention.middle']);
    expect(invalidPaths({ ...raw(), groupOverrides: { '1': { attention: { budget: -1 } } } })).toEqual([
      'groupOverrides.1.attention.budget',
    ]);
  });
});
