import { EventKind, makeEvent } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { sealEnvelope, sealHolds, sealOf } from './entry-seal.js';

describe('entry seal', () => {
  const event = makeEvent({
    kind: EventKind.MessageObserved,
    groupId: '30001',
    payload: sampleMessage('hi'),
    source: 'test',
  });

  it('holds over the exact bytes it was made for', () => {
    const entry = sealEnvelope(event);
    expect(entry.json).toBe(JSON.stringify(event));
    expect(sealHolds(entry.json, entry.seal)).toBe(true);
  });

  it('does not hold over changed bytes, another schema, or no seal', () => {
    const entry = sealEnvelope(event);
    expect(sealHolds(entry.json.replace('hi', 'ho'), entry.seal)).toBe(false);
    const [, digest] = entry.seal.split('.');
    expect(sealHolds(entry.json, `000000000000.${digest}`)).toBe(false);
    expect(sealHolds(entry.json, undefined)).toBe(false);
    expect(sealHolds(entry.json, digest)).toBe(false);
    expect(sealOf(entry.json)).toBe(entry.seal);
  });
});
