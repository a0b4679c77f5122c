import { commandRates } from './command-rates.js';

describe('commandRates', () => {
  it('divides what each command ran between the two reads, most first, and leaves out what did not run', () => {
    const before = new Map([
      ['xadd', 100],
      ['evalsha', 40],
      ['ping', 7],
    ]);
    const after = new Map([
      ['xadd', 300],
      ['evalsha', 540],
      ['ping', 7],
      ['hmget', 50],
    ]);
    expect(commandRates(before, after, 100)).toEqual([
      ['evalsha', 5],
      ['xadd', 2],
      ['hmget', 0.5],
    ]);
  });

  it('counts a command the first read did not list from zero', () => {
    expect(commandRates(new Map(), new Map([['get', 30]]), 10)).toEqual([['get', 3]]);
  });
});
