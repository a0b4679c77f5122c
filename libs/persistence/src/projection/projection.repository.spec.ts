import type { BatchEntry } from '@app/event-bus';
import { chain } from './chain.fixture.js';
import { archiveRow } from './projection.repository.js';

function entry(event: BatchEntry['event']): BatchEntry {
  return { partition: 3, entryId: '1800000000000-7', event, deliveries: 1 };
}

describe('archiveRow', () => {
  it('serialises the entry and its envelope as they are, without copying the event', () => {
    const event = chain('40001').events[0]!;
    const { json, event: folded } = archiveRow(entry(event));
    expect(folded).toBe(event);
    expect(JSON.parse(json)).toEqual({ p: 3, i: '1800000000000-7', e: JSON.parse(JSON.stringify(event)) });
  });

  it('puts U+FFFD in the place of each NUL, in the archived text and in the event it folds', () => {
    const message = chain('40001').events[0]!;
    const payload = message.payload as { text: string };
    const event = { ...message, payload: { ...payload, text: 'a\u0000b \\u0000 stays \\\u0000' } };
    const { json, event: folded } = archiveRow(entry(event));
    expect((folded.payload as { text: string }).text).toBe('a\ufffdb \\u0000 stays \\\ufffd');
    expect(JSON.parse(json)).toEqual({ p: 3, i: '1800000000000-7', e: folded });
    // The entry the bus handed over is left as it was.
    expect(event.payload.text).toBe('a\u0000b \\u0000 stays \\\u0000');
  });

  it('archives the text the reader read when it has it, NULs replaced there too', () => {
    const { payload, ...rest } = chain('40001').events[0]!;
    // Spaced out: the row must carry the reader's bytes, not a new serialisation of the event.
    const text = JSON.stringify({ ...rest, payload: { ...(payload as object), text: 'x\u0000y' } }, null, 1);
    const event = JSON.parse(text) as BatchEntry['event'];
    const { json, event: folded } = archiveRow({ ...entry(event), json: text });
    expect(json).toBe(`{"p":3,"i":"1800000000000-7","e":${text.replace('\\u0000', '\\ufffd')}}`);
    expect((folded.payload as { text: string }).text).toBe('x\ufffdy');
  });
});
