import { statementName } from './prepared-query.js';

describe('statementName', () => {
  const insert = 'INSERT INTO event_log (id) SELECT * FROM unnest($1::text[])';

  it('names the same text the same way every time', () => {
    expect(statementName(insert)).toBe(statementName(`${insert}`));
  });

  it('gives different texts different names, even when they differ by one character', () => {
    const names = new Set([insert, `${insert} `, insert.replace('$1', '$2'), 'SELECT 1'].map(statementName));
    expect(names.size).toBe(4);
  });

  it('stays within a Postgres identifier (63 bytes), whatever the length of the text', () => {
    const name = statementName(`SELECT ${'x, '.repeat(5000)}1`);
    expect(name).toMatch(/^qunli_[0-9a-f]{20}$/);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
  });
});
