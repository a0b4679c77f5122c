import { ValidatedEntries } from './validated-entries.js';

describe('validated entries', () => {
  it('remembers entries per stream and forgets the oldest beyond its capacity', () => {
    const seen = new ValidatedEntries(2);
    seen.add('s1', '1-0');
    expect(seen.has('s1', '1-0')).toBe(true);
    expect(seen.has('s2', '1-0')).toBe(false);
    seen.add('s1', '2-0');
    seen.add('s1', '3-0');
    expect(seen.has('s1', '1-0')).toBe(false);
    expect(seen.has('s1', '3-0')).toBe(true);
  });
});
