import { envelopeErrors, EventKind, makeEvent, type EventEnvelope } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { envelopeHolds } from './envelope-check.js';

const HOSTILE: unknown[] = [
  undefined,
  null,
  '',
  'x'.repeat(5000),
  '\u0000',
  '\ud800',
  0,
  -1,
  1.5,
  2 ** 53,
  Number.NaN,
  true,
  [],
  ['a', 1],
  [{}],
  {},
  { __proto__: { polluted: true } },
  JSON.parse('{"__proto__": {"x": 1}}'),
  '2026-13-45T99:00:00Z',
  'message.observed',
  'member',
];

function samples(): EventEnvelope[] {
  const message = makeEvent({
    kind: EventKind.MessageObserved,
    groupId: '30001',
    source: 'ingress',
    payload: sampleMessage('今天晚上吃什么 [CQ:face,id=1]', {
      sender: { userId: '20001', nickname: 'n', card: 'c', displayName: 'c', role: 'admin' },
    }),
  });
  const direct = makeEvent({
    kind: EventKind.MessageDirect,
    groupId: '30002',
    source: 'ingress',
    payload: { ...sampleMessage('@bot 你好'), mentionsSelf: true, directReason: 'at' },
    priority: 0,
  });
  const decision = makeEvent({
    kind: EventKind.DecisionMade,
    groupId: '30001',
    source: 'scheduler',
    cause: message,
    payload: { subjectEventId: message.id, outcome: 'skip', reason: 'ambient', features: {}, transitions: [] },
  });
  return [message, direct, decision].map((e) => JSON.parse(JSON.stringify(e)) as EventEnvelope);
}

/** Every (path, replacement) of an object: each field set to each hostile value, and deleted. */
function* mutations(root: unknown): Generator<unknown> {
  const paths: (string | number)[][] = [];
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (path.length > 0) paths.push(path);
    if (typeof value === 'object' && value !== null) {
      for (const [key, child] of Object.entries(value))
        walk(child, [...path, Array.isArray(value) ? Number(key) : key]);
    }
  };
  walk(root, []);
  for (const path of paths) {
    for (const replacement of [...HOSTILE, 'delete']) {
      const copy = structuredClone(root) as Record<string | number, unknown>;
      let parent = copy;
      for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
      const last = path[path.length - 1]!;
      if (replacement === 'delete') delete parent[last];
      else parent[last] = replacement;
      yield copy;
    }
  }
}

describe('fast envelope check against class-validator', () => {
  it('holds for valid envelopes, so writes of the hot kinds skip class-validator', () => {
    for (const event of samples()) {
      expect(envelopeErrors(event)).toEqual([]);
      expect(envelopeHolds(event)).toBe(true);
    }
  });

  it('never holds where class-validator finds an error (every field of the samples, hostile values)', () => {
    let checked = 0;
    let agreedValid = 0;
    const disagreements: string[] = [];
    for (const event of samples()) {
      for (const mutated of mutations(event)) {
        checked++;
        const valid = envelopeErrors(mutated).length === 0;
        const holds = envelopeHolds(mutated);
        if (holds && !valid) disagreements.push(JSON.stringify(mutated).slice(0, 300));
        if (holds && valid) agreedValid++;
      }
    }
    expect(disagreements).toEqual([]);
    expect(checked).toBeGreaterThan(1000);
    // Not vacuous: the check does accept the mutations class-validator accepts (most of them).
    expect(agreedValid).toBeGreaterThan(50);
  });

  it('refuses what is not an envelope at all', () => {
    for (const value of [null, 5, 'x', [], {}]) expect(envelopeHolds(value)).toBe(false);
  });
});
