import { compareStreamIds, trimPoint, type GroupPosition } from './stream-trim.rules.js';

const MINUTE = 60_000;
const NOW = 1_800_000_000_000;
const RETENTION = 10 * MINUTE;
const old = (minutesAgo: number, seq = 0) => `${NOW - minutesAgo * MINUTE}-${seq}`;

function group(name: string, lastDeliveredId: string, oldestPendingId: string | null = null): GroupPosition {
  return { group: name, lastDeliveredId, oldestPendingId };
}

describe('compareStreamIds', () => {
  it('orders by milliseconds, then by sequence, numerically', () => {
    expect(compareStreamIds('9-0', '10-0')).toBeLessThan(0);
    expect(compareStreamIds('10-2', '10-10')).toBeLessThan(0);
    expect(compareStreamIds('10-10', '10-2')).toBeGreaterThan(0);
    expect(compareStreamIds('5-5', '5-5')).toBe(0);
    expect(compareStreamIds('1-18446744073709551615', '2-0')).toBeLessThan(0);
  });

  it('refuses text that is no stream id', () => {
    expect(() => compareStreamIds('abc', '1-0')).toThrow(RangeError);
  });
});

describe('trimPoint', () => {
  const base = { nowMs: NOW, retentionMs: RETENTION };

  it('trims nothing before the projector has archived anything', () => {
    expect(trimPoint({ ...base, archivedThrough: null, groups: [group('scheduler', old(60))] })).toBeNull();
  });

  it('cuts at the archive checkpoint when everything else is further on', () => {
    const point = trimPoint({
      ...base,
      archivedThrough: old(30, 4),
      groups: [group('projector', old(30, 4)), group('scheduler', old(20))],
    });
    expect(point).toBe(old(30, 4));
  });

  it('never cuts past what a consumer group has not been handed yet', () => {
    const point = trimPoint({
      ...base,
      archivedThrough: old(30),
      groups: [group('projector', old(30)), group('outbound', old(45, 1))],
    });
    expect(point).toBe(old(45, 1));
  });

  it('keeps the oldest entry a group still holds unacknowledged', () => {
    const point = trimPoint({
      ...base,
      archivedThrough: old(30),
      groups: [group('projector', old(30)), group('scheduler', old(20), old(50, 7))],
    });
    expect(point).toBe(old(50, 7));
  });

  it('keeps the retention window even when everything is archived and acknowledged', () => {
    const point = trimPoint({
      ...base,
      archivedThrough: old(1),
      groups: [group('projector', old(1)), group('scheduler', old(1))],
    });
    expect(point).toBe(`${NOW - RETENTION}-0`);
  });

  it('trims nothing while a group is new and has been handed nothing', () => {
    expect(trimPoint({ ...base, archivedThrough: old(30), groups: [group('scheduler', '0-0')] })).toBeNull();
  });

  it('compares ids as numbers, not text', () => {
    const point = trimPoint({
      nowMs: 100 * MINUTE,
      retentionMs: 0,
      archivedThrough: '1000-0',
      groups: [group('projector', '999-12'), group('scheduler', '10000-0')],
    });
    expect(point).toBe('999-12');
  });
});
