import { envelopeErrors, EventKind, makeEvent, parseEnvelope, ValidationFailed, type MessagePayload } from './index.js';

const message: MessagePayload = {
  messageType: 'group',
  selfId: '10001',
  messageId: '2096329721',
  sender: { userId: '20001', nickname: 'Alice', card: '', displayName: 'Alice', role: 'admin' },
  segments: [{ type: 'text', data: { text: 'test' } }],
  text: 'test',
  truncated: false,
  mentionsSelf: false,
  sentAt: 1747107314,
};

describe('event envelope', () => {
  it('accepts an envelope built by makeEvent and fills causation from the cause', () => {
    const first = makeEvent({ kind: EventKind.MessageObserved, groupId: '30001', payload: message, source: 'ingress' });
    expect(envelopeErrors(first)).toEqual([]);
    expect(first.correlationId).toBe(first.id);
    expect(first.causationId).toBeNull();

    const decision = makeEvent({
      kind: EventKind.DecisionMade,
      groupId: '30001',
      source: 'scheduler',
      cause: first,
      payload: { subjectEventId: first.id, outcome: 'skip', reason: 'not addressed', features: {}, transitions: [] },
    });
    expect(decision.correlationId).toBe(first.id);
    expect(decision.causationId).toBe(first.id);
    expect(envelopeErrors(decision)).toEqual([]);
  });

  it('names every bad field, including nested payload fields', () => {
    const event = makeEvent({ kind: EventKind.MessageObserved, groupId: '30001', payload: message, source: 'ingress' });
    const broken = {
      ...event,
      priority: 42,
      payload: { ...message, sender: { ...message.sender, role: 'king' }, sentAt: 'yesterday' },
    };
    const paths = envelopeErrors(broken).map((e) => e.path);
    expect(paths).toEqual(['priority']);
    const payloadPaths = envelopeErrors({ ...event, payload: broken.payload }).map((e) => e.path);
    expect(payloadPaths.sort()).toEqual(['payload.sender.role', 'payload.sentAt']);
  });

  it('rejects unknown kinds and non-objects', () => {
    expect(envelopeErrors('hello')).toEqual([{ path: '', message: 'must be an object' }]);
    const event = makeEvent({ kind: EventKind.MessageObserved, groupId: '1', payload: message, source: 'ingress' });
    expect(envelopeErrors({ ...event, kind: 'message.teleported' }).map((e) => e.path)).toEqual(['kind']);
    expect(() => parseEnvelope({ ...event, id: 7 })).toThrow(ValidationFailed);
  });

  it('generates time-ordered ids', () => {
    const ids = Array.from(
      { length: 50 },
      () => makeEvent({ kind: EventKind.MessageObserved, groupId: '1', payload: message, source: 'ingress' }).id,
    );
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
