import { MAX_JSON_DEPTH, nestsDeeperThan } from './onebot-json.rules.js';

describe('JSON nesting depth', () => {
  it('passes a real event and refuses thousands of nested brackets', () => {
    const event = JSON.stringify({ post_type: 'message', message: [{ type: 'text', data: { text: 'hi [[{{' } }] });
    expect(nestsDeeperThan(event, MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan('['.repeat(20_000), MAX_JSON_DEPTH)).toBe(true);
    expect(nestsDeeperThan(`${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}`, MAX_JSON_DEPTH)).toBe(true);
  });

  it('counts brackets inside strings (escaped quotes included) as text, not nesting', () => {
    const text = JSON.stringify({ text: `\\"${'['.repeat(500)}` });
    expect(nestsDeeperThan(Buffer.from(text), 3)).toBe(false);
    expect(nestsDeeperThan('[[[[', 3)).toBe(true);
    expect(nestsDeeperThan('[[[]]]', 3)).toBe(false);
  });
});
