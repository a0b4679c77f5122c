import { QunliError } from '@app/contracts';

/** Stable codes of the keyword lexicon's errors: metrics, logs, the CLI and later the panel group by them. */
export const KeywordErrorCode = {
  /** A term that is empty, too long or only a stopword after normalising. */
  InvalidTerm: 'KEYWORD.INVALID_TERM',
  /** A scope that is not one of the six, or an owner id that does not fit it. */
  InvalidScope: 'KEYWORD.INVALID_SCOPE',
  /** A control command that is not pin / suppress / delete / add, or is missing its arguments. */
  InvalidCommand: 'KEYWORD.INVALID_COMMAND',
  /** Delete of a term the set does not hold. */
  NotFound: 'KEYWORD.NOT_FOUND',
  /** A word learned in a group (extracted, jargon, summary) may never enter the global or persona sets. */
  InJokeNotGlobal: 'KEYWORD.IN_JOKE_NOT_GLOBAL',
  /** Another process moved a keyword set on while a change to it was computed (transient: handled again). */
  Conflict: 'KEYWORD.CONFLICT',
} as const;
export type KeywordErrorCode = (typeof KeywordErrorCode)[keyof typeof KeywordErrorCode];

export class KeywordError extends QunliError {
  constructor(code: KeywordErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, details);
    this.name = 'KeywordError';
  }
}
