import {
  EventKind,
  KEYWORD_COMMANDS,
  makeEvent,
  type EventEnvelope,
  type KeywordCommand,
  type KeywordControlRequestedPayload,
} from '@app/contracts';
import { KeywordError, KeywordErrorCode } from './keyword.errors.js';
import { groupOfSet } from './lexicon-draft.js';
import { setRef, termText, type SetRef } from './lexicon.rules.js';

/*
 * A person's command on the lexicon (the CLI and the scheduler's HTTP endpoint; the panel later), validated into
 * a `keyword.control.requested` event before anything is written. Bad input is a `KeywordError` with a stable code.
 */

export interface KeywordCommandInput {
  command: unknown;
  scope: unknown;
  ownerId?: unknown;
  term: unknown;
  aliases?: unknown;
  weight?: unknown;
  requestedBy?: unknown;
}

function text(value: unknown, what: string): string {
  if (typeof value !== 'string') {
    throw new KeywordError(KeywordErrorCode.InvalidCommand, `${what} must be a string`, { [what]: value ?? null });
  }
  return value;
}

export function keywordCommand(input: KeywordCommandInput): { ref: SetRef; payload: KeywordControlRequestedPayload } {
  const command = text(input.command, 'command');
  if (!(KEYWORD_COMMANDS as readonly string[]).includes(command)) {
    throw new KeywordError(KeywordErrorCode.InvalidCommand, `unknown command "${command}"`, {
      command,
      commands: KEYWORD_COMMANDS,
    });
  }
  const ref = setRef(text(input.scope, 'scope'), input.ownerId === undefined ? '' : text(input.ownerId, 'ownerId'));
  const term = text(input.term, 'term');
  termText(term);
  const aliases =
    input.aliases === undefined
      ? []
      : Array.isArray(input.aliases)
        ? input.aliases.map((a) => text(a, 'aliases'))
        : [text(input.aliases, 'aliases')];
  aliases.forEach(termText);
  if (aliases.length > 8) {
    throw new KeywordError(KeywordErrorCode.InvalidCommand, 'at most 8 aliases', { aliases });
  }
  let weight: number | undefined;
  if (input.weight !== undefined) {
    weight = typeof input.weight === 'number' ? input.weight : Number(input.weight);
    if (!Number.isFinite(weight) || weight < 0 || weight > 1) {
      throw new KeywordError(KeywordErrorCode.InvalidCommand, 'weight is a number from 0 to 1', {
        weight: input.weight,
      });
    }
  }
  const by = input.requestedBy === undefined ? 'operator' : text(input.requestedBy, 'requestedBy');
  if (by.length === 0 || by.length > 64) {
    throw new KeywordError(KeywordErrorCode.InvalidCommand, 'requestedBy is 1–64 characters', { requestedBy: by });
  }
  return {
    ref,
    payload: {
      command: command as KeywordCommand,
      scope: ref.scope,
      ownerId: ref.ownerId,
      term,
      requestedBy: by,
      ...(aliases.length > 0 ? { aliases } : {}),
      ...(weight !== undefined ? { weight } : {}),
    },
  };
}

/** The event, in the partition of the set's group (global sets: the bot's own), so it applies in that order. */
export function keywordCommandEvent(
  ref: SetRef,
  payload: KeywordControlRequestedPayload,
  source: string,
  at: Date,
): EventEnvelope {
  return makeEvent({
    kind: EventKind.KeywordControlRequested,
    groupId: groupOfSet(ref),
    source,
    createdAt: at,
    payload,
  });
}
