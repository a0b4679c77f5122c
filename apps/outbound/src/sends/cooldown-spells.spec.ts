import { CooldownSpells } from './cooldown-spells.js';

describe('CooldownSpells', () => {
  it('reports nothing before any cooldown', () => {
    expect(new CooldownSpells().current(1_000)).toEqual({ conversations: 0, longestMs: 0 });
  });

  it('joins a cooldown that starts before the previous one ended into one spell', () => {
    const spells = new CooldownSpells();
    spells.start('g:1', 0, 60_000);
    spells.start('g:1', 50_000, 110_000);
    spells.start('g:1', 100_000, 160_000);
    expect(spells.current(150_000)).toEqual({ conversations: 1, longestMs: 150_000 });
  });

  it('starts a new spell after a break, and forgets spells that ended', () => {
    const spells = new CooldownSpells();
    spells.start('g:1', 0, 60_000);
    spells.start('g:2', 10_000, 70_000);
    expect(spells.current(65_000)).toEqual({ conversations: 1, longestMs: 55_000 });
    spells.start('g:1', 80_000, 140_000);
    expect(spells.current(90_000)).toEqual({ conversations: 1, longestMs: 10_000 });
    expect(spells.current(200_000)).toEqual({ conversations: 0, longestMs: 0 });
  });
});
