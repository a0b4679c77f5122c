import type { DirectReason } from '@app/contracts';

/**
 * Whether a message is addressed to the bot, and why (issue 5). Pure: the caller says whether the quoted message
 * is one of the bot's (looked up in the sent-ids store, docs/adr/0008).
 *
 * The QQ client adds an automatic @ of the quoted author right after a quote (`[reply][at author] …`). Like
 * koishi's `session.stripped`, that @ is not a fresh mention: a quote of the bot is `reply`, not `at`. When the
 * store has forgotten the quoted message but the automatic @ names the bot, the quote was of the bot's message
 * all the same.
 */
export interface DirectnessClues {
  private: boolean;
  /** A poke (戳一戳) at the bot, carried as a message. */
  poke: boolean;
  /** An @ of the bot other than the quote's automatic one. */
  freshAtSelf: boolean;
  /** The @ right after the quote names the bot. */
  quoteAtSelf: boolean;
  /** The message id it quotes. */
  replyTo?: string;
  /** A configured nickname (by default the persona's name and aliases) appears in what was typed. */
  named: boolean;
}

export function directReasonFor(clues: DirectnessClues, quotesBot: boolean): DirectReason | undefined {
  if (clues.poke) return 'poke';
  if (clues.private) return 'private';
  if (clues.replyTo !== undefined && (quotesBot || clues.quoteAtSelf)) return 'reply';
  if (clues.freshAtSelf) return 'at';
  if (clues.named) return 'name';
  return undefined;
}

/** Does `typed` call the bot by one of its names? Case-insensitive, anywhere in the text. */
export function callsByName(typed: string, nicknames: readonly string[]): boolean {
  const lower = typed.toLowerCase();
  return nicknames.some((name) => name.length > 0 && lower.includes(name.toLowerCase()));
}
