import { globalBucket, groupBucket, typingDelayMs } from './send-pacing.rules.js';

describe('send pacing rules', () => {
  it('turns the settings into token buckets', () => {
    expect(groupBucket(20, 5)).toEqual({ ratePerMs: 20 / 60_000, capacity: 5 });
    expect(globalBucket(2.5)).toEqual({ ratePerMs: 0.0025, capacity: 3 });
  });

  it('types at the configured pace, counting characters (not UTF-16 units), capped at 10 s', () => {
    expect(typingDelayMs('你好😀', 0)).toBe(0);
    expect(typingDelayMs('你好😀', 3)).toBe(1000);
    expect(typingDelayMs('字'.repeat(1000), 10)).toBe(10_000);
  });
});
