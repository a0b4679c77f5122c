/**
 * How long each conversation has been kept quiet by send cooldowns without a break. A cooldown that starts
 * before the previous one ended extends the same spell, so repeated risk-control refusals read as one long
 * spell: that is what the "group in long cooldown" alert watches. Plain data on product time; the pacer feeds it.
 */
export class CooldownSpells {
  private readonly spells = new Map<string, { since: number; until: number }>();

  /** `conversation` cools down from `now` until `until`. */
  start(conversation: string, now: number, until: number): void {
    const spell = this.spells.get(conversation);
    if (spell && spell.until >= now) spell.until = Math.max(spell.until, until);
    else this.spells.set(conversation, { since: now, until });
  }

  /** The spells still running at `now` (ended ones are forgotten): how many, and the longest so far in ms. */
  current(now: number): { conversations: number; longestMs: number } {
    let longestMs = 0;
    for (const [conversation, spell] of this.spells) {
      if (spell.until < now) this.spells.delete(conversation);
      else longestMs = Math.max(longestMs, now - spell.since);
    }
    return { conversations: this.spells.size, longestMs };
  }
}
