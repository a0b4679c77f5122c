import { EventKind, makeEvent } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { commitArguments } from './commit.script.js';
import { sealEnvelope, sealHolds } from './entry-seal.js';
import { WIRE_BUFFER_MIN_CHARS, wireArg } from './wire.js';

describe('wireArg', () => {
  it('passes long strings as their UTF-8 bytes and leaves short ones and numbers alone', () => {
    const long = '群'.repeat(WIRE_BUFFER_MIN_CHARS);
    const wired = wireArg(long);
    expect(Buffer.isBuffer(wired)).toBe(true);
    expect((wired as Buffer).toString('utf8')).toBe(long);
    expect((wired as Buffer).length).toBe(Buffer.byteLength(long));
    expect(wireArg('群'.repeat(WIRE_BUFFER_MIN_CHARS - 1))).toBe('群'.repeat(WIRE_BUFFER_MIN_CHARS - 1));
    expect(wireArg(42)).toBe(42);
  });
});

describe('commitArguments', () => {
  const event = makeEvent({
    kind: EventKind.MessageObserved,
    groupId: '30001',
    source: 'test',
    payload: sampleMessage(`大家好${'。'.repeat(300)}`),
  });

  it('sends each published envelope as the bytes its seal was made over', () => {
    const sealed = sealEnvelope(event);
    expect(sealed.bytes.equals(Buffer.from(sealed.json))).toBe(true);
    expect(sealHolds(sealed.bytes.toString('utf8'), sealed.seal)).toBe(true);
    const { argv } = commitArguments({
      stream: 's',
      inbox: 'i',
      group: 'g',
      entryId: '1-0',
      eventId: event.id,
      nowMs: 1,
      events: [sealed],
      commands: [],
    });
    // The groups that handle no message.observed are passed over it (ADR 0044).
    expect(argv).toEqual(['g', '1-0', event.id, 1, 'outbound', 1, event.kind, sealed.bytes, sealed.seal, 0]);
  });

  it("passes the staged commands' long arguments as bytes, in order, with their keys after the script's own", () => {
    const state = JSON.stringify({ text: '一'.repeat(400) });
    const { keys, argv } = commitArguments({
      stream: 's',
      inbox: 'i',
      group: 'g',
      entryId: '1-0',
      eventId: 'e1',
      nowMs: 1,
      events: [],
      commands: [
        { command: 'HSET', keys: ['state'], args: ['e:e1', state] },
        { command: 'EXPIRE', keys: ['state'], args: [60] },
      ],
    });
    expect(keys).toEqual(['s', 'i', 'state', 'state']);
    // No events: no group to pass over.
    expect(argv.slice(0, 7)).toEqual(['g', '1-0', 'e1', 1, '', 0, 2]);
    expect(argv.slice(7, 11)).toEqual(['HSET', 1, 2, 'e:e1']);
    expect(Buffer.isBuffer(argv[11])).toBe(true);
    expect((argv[11] as Buffer).toString('utf8')).toBe(state);
    expect(argv.slice(12)).toEqual(['EXPIRE', 1, 1, 60]);
  });
});
