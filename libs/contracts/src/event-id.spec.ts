import { newEventId } from './envelope.js';

describe('event ids', () => {
  it('are UUIDv7s, unique, and sort in the order they were made — across refills of the random pool', () => {
    const ids = Array.from({ length: 5000 }, () => newEventId());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('carry the time they were made in their first 48 bits', () => {
    const before = Date.now();
    const id = newEventId();
    const after = Date.now();
    const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after + 1);
  });
});
