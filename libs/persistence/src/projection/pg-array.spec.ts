import { createRequire } from 'node:module';
import { arrayParameter, pgArrayLiteral } from './pg-array.js';

// node-postgres' own conversion of a parameter: what it would have sent for the array.
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils') as { prepareValue(value: unknown): unknown };

describe('pgArrayLiteral', () => {
  it.each([
    ['plain strings', ['a', 'bc', '']],
    ['quotes and backslashes', ['say "hi"', 'C:\\dir\\', '\\"', '"', '\\\\']],
    ['JSON text, as jsonb cells are sent', [JSON.stringify({ a: 'x"y', b: ['\\n', null], c: '群里 \\u0000' })]],
    ['NULL for null and undefined, the word NULL quoted', [null, undefined, 'NULL', 'null']],
    ['braces, commas and spaces inside quotes', ['{a,b}', ' lead', 'trail ', 'a, b']],
    ['numbers, booleans and bigints', [1, 1.5, -0, NaN, Infinity, -Infinity, 1e21, true, false, 10n]],
    ['Chinese text and emoji', ['第1条消息，大家好', '😀\u200d', '\u3000']],
    ['an empty array', []],
  ])('writes %s exactly as node-postgres does', (_name, values) => {
    expect(pgArrayLiteral(values)).toBe(prepareValue(values));
  });

  it('declines what it does not write itself (dates, objects, nested arrays, buffers)', () => {
    for (const odd of [new Date(0), { a: 1 }, ['x'], Buffer.from('x')]) {
      expect(pgArrayLiteral(['a', odd])).toBeUndefined();
    }
  });
});

describe('arrayParameter', () => {
  it('is the literal when there is one, and the array itself otherwise', () => {
    expect(arrayParameter(['a"', null])).toBe('{"a\\"",NULL}');
    const dates = [new Date(0)];
    expect(arrayParameter(dates)).toBe(dates);
  });
});
