import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { readFileSync } from 'node:fs';
import { QunliError } from '@app/contracts';
import { effectivePersona, loadPersona, parsePersona, PersonaPolicy } from './index.js';

const DEFAULT_PATH = join(import.meta.dirname, '../../../personas/default.yaml');

function defaultRaw(): Record<string, unknown> {
  return parseYaml(readFileSync(DEFAULT_PATH, 'utf8')) as Record<string, unknown>;
}

function invalidPaths(raw: unknown): string[] {
  try {
    parsePersona(raw, 'test');
  } catch (error) {
    expect(error).toBeInstanceOf(QunliError);
    expect((error as QunliError).code).toBe('PERSONA.INVALID');
    return ((error as QunliError).details.fields as { path: string }[]).map((f) => f.path);
  }
  throw new Error('expected PERSONA.INVALID');
}

describe('loadPersona', () => {
  it('loads the default persona with a routine and a time zone', () => {
    const persona = loadPersona(DEFAULT_PATH);
    expect(persona).toBeInstanceOf(PersonaPolicy);
    expect(persona.identity.name).toBe('林小满');
    expect(persona.identity.aliases).toContain('小满');
    expect(persona.routine.length).toBeGreaterThan(5);
    expect(persona.timezone).toBe('Asia/Shanghai');
    expect(persona.groupOverrides).toEqual({});
  });

  it('says when the file is missing', () => {
    expect(() => loadPersona('/nonexistent/persona.yaml')).toThrow(
      expect.objectContaining({ code: 'PERSONA.NOT_FOUND' }),
    );
  });

  it('says when the file is not YAML or not a mapping', () => {
    const dir = mkdtempSync(join(tmpdir(), 'persona-'));
    try {
      writeFileSync(join(dir, 'broken.yaml'), 'identity: [unclosed');
      writeFileSync(join(dir, 'list.yaml'), '- a\n- b\n');
      expect(() => loadPersona(join(dir, 'broken.yaml'))).toThrow(expect.objectContaining({ code: 'PERSONA.INVALID' }));
      expect(() => loadPersona(join(dir, 'list.yaml'))).toThrow(/must be a mapping/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const REMOVE = Symbol('remove');
  it.each<[string, string, unknown]>([
    ['identity.name', 'identity.name', ''],
    ['identity.aliases', 'identity.aliases', 'xiaoman'],
    ['identity.description', 'identity.description', REMOVE],
    ['identity', 'identity', REMOVE],
    ['values', 'values', [1, 2]],
    ['mood', 'mood', 3],
    ['interests', 'interests', REMOVE],
    ['participationBias', 'participationBias', 1.5],
    ['curiosity', 'curiosity', -0.1],
    ['sociability', 'sociability', 'high'],
    ['patience', 'patience', REMOVE],
    ['toolBias', 'toolBias', 2],
    ['speakingStyle', 'speakingStyle', ''],
    ['timezone', 'timezone', 'Mars/Olympus'],
    ['curiousity', 'curiousity', 0.5],
    ['routine.0.at', 'routine.0.at', '25:00'],
    ['routine.1.title', 'routine.1.title', REMOVE],
    ['routine.2.durationMinutes', 'routine.2.durationMinutes', 0],
    ['groupOverrides.123.curiosity', 'groupOverrides', { '123': { curiosity: 7 } }],
    ['groupOverrides.abc', 'groupOverrides', { abc: {} }],
    ['groupOverrides.123.name', 'groupOverrides', { '123': { name: 'x' } }],
  ])('names %s when it is bad', (expected, path, value) => {
    const raw = defaultRaw();
    const keys = path.split('.');
    const last = keys.pop()!;
    let target = raw;
    for (const key of keys) target = target[key] as Record<string, unknown>;
    if (value === REMOVE) delete target[last];
    else target[last] = value;
    expect(invalidPaths(raw)).toContain(expected);
  });

  it('names every bad field at once, in one message', () => {
    const raw = defaultRaw();
    raw.curiosity = 9;
    raw.mood = '';
    (raw.identity as Record<string, unknown>).name = 42;
    let message = '';
    try {
      parsePersona(raw, 'x.yaml');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^persona x\.yaml is invalid: /);
    for (const field of ['curiosity', 'mood', 'identity.name']) expect(message).toContain(field);
  });

  it('rejects routine activities that overlap, also across midnight', () => {
    const base = defaultRaw();
    const overlapping = {
      ...base,
      routine: [
        { at: '08:00', title: 'a', description: '', durationMinutes: 120 },
        { at: '09:00', title: 'b', description: '', durationMinutes: 30 },
      ],
    };
    expect(invalidPaths(overlapping)).toEqual(['routine.0.durationMinutes']);
    const pastMidnight = {
      ...base,
      routine: [
        { at: '23:00', title: 'sleep', description: '', durationMinutes: 600 },
        { at: '07:00', title: 'wake', description: '', durationMinutes: 30 },
      ],
    };
    expect(invalidPaths(pastMidnight)).toEqual(['routine.0.durationMinutes']);
  });
});

describe('effectivePersona', () => {
  const raw = {
    ...defaultRaw(),
    groupOverrides: {
      '30001': { mood: '有点兴奋', interests: ['狼人杀'], curiosity: 0.9, notes: '高中同学群，大家很熟' },
    },
  };
  const policy = parsePersona(raw, 'test');

  it('applies the overrides of the group, replacing lists', () => {
    const persona = effectivePersona(policy, '30001');
    expect(persona.mood).toBe('有点兴奋');
    expect(persona.interests).toEqual(['狼人杀']);
    expect(persona.curiosity).toBe(0.9);
    expect(persona.groupNotes).toBe('高中同学群，大家很熟');
    expect(persona.sociability).toBe(policy.sociability);
    expect(persona.identity).toEqual(policy.identity);
    expect('groupOverrides' in persona).toBe(false);
  });

  it('gives the base persona to other groups and private chats', () => {
    for (const groupId of ['30002', null]) {
      const persona = effectivePersona(policy, groupId);
      expect(persona.mood).toBe(policy.mood);
      expect(persona.curiosity).toBe(policy.curiosity);
      expect(persona.groupNotes).toBeUndefined();
    }
  });
});
