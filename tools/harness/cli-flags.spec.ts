import { cliFlags } from './cli-flags.js';

describe('cliFlags', () => {
  it('reads --name value, --name=value and bare flags, and leaves other arguments alone', () => {
    const flags = cliFlags(['generate', '--out', 'a.jsonl', '--seed=7', '--redis-crash', '--groups', '4', '--json']);
    expect(Object.fromEntries(flags)).toEqual({
      out: 'a.jsonl',
      seed: '7',
      'redis-crash': 'true',
      groups: '4',
      json: 'true',
    });
  });
});
