import { EventKind } from './event-kinds.js';
import { ConsumerGroup, fnv1a32, groupsPassedOver, Keyspace, partitionOf } from './streams.js';

describe('partitioning', () => {
  it('is stable: the same group always maps to the same partition', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(partitionOf('30001', 16)).toBe(partitionOf('30001', 16));
  });

  it('spreads 1,000 groups over 16 partitions without a hot spot', () => {
    const counts = new Array<number>(16).fill(0);
    for (let g = 0; g < 1000; g++) counts[partitionOf(String(300000 + g), 16)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(1000 / 16 / 2);
    expect(Math.max(...counts)).toBeLessThan((1000 / 16) * 2);
  });

  it('puts every key of one partition in the same Redis Cluster hash slot tag', () => {
    const keys = new Keyspace('qunli', 16);
    const p = keys.partitionOf('30001');
    const tag = `{p${p}}`;
    for (const key of [
      keys.stream(p),
      keys.deadLetters(p),
      keys.inbox(p, 'scheduler'),
      keys.groupRecent(p, '30001'),
      keys.sendLedger(p),
      keys.dedup(p, 'x'),
    ]) {
      expect(key.match(/\{[^}]*\}/)?.[0]).toBe(tag);
    }
  });

  it('refuses a partition count that is not a positive integer', () => {
    expect(() => new Keyspace('q', 0)).toThrow(RangeError);
    expect(() => new Keyspace('q', 1.5)).toThrow(RangeError);
  });
});

describe('groupsPassedOver (ADR 0044)', () => {
  it('names the per-event groups that handle none of the appended kinds, never a batch group', () => {
    expect(groupsPassedOver([EventKind.DecisionMade]).sort()).toEqual(
      [ConsumerGroup.Memory, ConsumerGroup.Outbound, ConsumerGroup.Scheduler].sort(),
    );
    expect(groupsPassedOver([EventKind.MessageObserved])).toEqual([ConsumerGroup.Outbound]);
    expect(groupsPassedOver([EventKind.TimerFired]).sort()).toEqual(
      [ConsumerGroup.Memory, ConsumerGroup.Outbound].sort(),
    );
    // One wanted kind among several keeps a group reading all of them.
    expect(groupsPassedOver([EventKind.DecisionMade, EventKind.ActionSend]).sort()).toEqual(
      [ConsumerGroup.Memory].sort(),
    );
    expect(groupsPassedOver([])).toHaveLength(3);
  });
});
