import { KEYWORD_COMMANDS, type KeywordControlRequestedPayload } from '@app/contracts';
import { keywordCommand } from '../../apps/scheduler/src/keywords/keyword-command.js';
import { KeywordError, KeywordErrorCode } from '../../apps/scheduler/src/keywords/keyword.errors.js';
import { setRef, type SetRef } from '../../apps/scheduler/src/keywords/lexicon.rules.js';

/*
 * `npm run keywords -- <pin|suppress|delete|add> <term> --scope <scope>[:<owner>] [--alias A]… [--weight W]
 * [--by NAME] [--json]` and `npm run keywords -- list --scope <scope>[:<owner>] [--json]`, parsed and validated
 * before anything touches Redis: a bad scope, term or weight is a `KeywordError` with a stable code.
 */

export const USAGE = `usage: npm run keywords -- <pin|suppress|delete|add> <term> --scope <scope>[:<owner id>] [--alias A]... [--weight 0-1] [--by NAME] [--json]
       npm run keywords -- list --scope <scope>[:<owner id>] [--json]
scopes: global | group:<group id> | thread:<group id>/<thread id> | persona:<id> | activity:<id> | game:<id>`;

export type KeywordCli =
  | { action: 'control'; ref: SetRef; payload: KeywordControlRequestedPayload; json: boolean }
  | { action: 'list'; ref: SetRef; json: boolean };

function parseScope(raw: string | undefined): SetRef {
  if (raw === undefined) {
    throw new KeywordError(KeywordErrorCode.InvalidScope, '--scope is required (e.g. --scope group:123456)', {});
  }
  const at = raw.indexOf(':');
  return at < 0 ? setRef(raw, '') : setRef(raw.slice(0, at), raw.slice(at + 1));
}

export function parseKeywordArgs(argv: readonly string[]): KeywordCli {
  const positional: string[] = [];
  const aliases: string[] = [];
  let scope: string | undefined;
  let weight: number | undefined;
  let by = 'cli';
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) {
        throw new KeywordError(KeywordErrorCode.InvalidCommand, `${arg} needs a value`, { option: arg });
      }
      return next;
    };
    if (arg === '--json') json = true;
    else if (arg === '--scope') scope = value();
    else if (arg === '--alias') aliases.push(value());
    else if (arg === '--by') by = value();
    else if (arg === '--weight') {
      const raw = value();
      weight = Number(raw);
      if (!Number.isFinite(weight) || weight < 0 || weight > 1) {
        throw new KeywordError(KeywordErrorCode.InvalidCommand, '--weight is a number from 0 to 1', { weight: raw });
      }
    } else if (arg.startsWith('--')) {
      throw new KeywordError(KeywordErrorCode.InvalidCommand, `unknown option ${arg}`, { option: arg });
    } else positional.push(arg);
  }
  const [action, term, ...extra] = positional;
  if (action === 'list') {
    if (term !== undefined) {
      throw new KeywordError(KeywordErrorCode.InvalidCommand, 'list takes no term', { term });
    }
    return { action: 'list', ref: parseScope(scope), json };
  }
  if (!(KEYWORD_COMMANDS as readonly string[]).includes(action ?? '')) {
    throw new KeywordError(KeywordErrorCode.InvalidCommand, `unknown command "${action ?? ''}"`, {
      command: action ?? null,
      commands: [...KEYWORD_COMMANDS, 'list'],
    });
  }
  if (term === undefined || extra.length > 0) {
    throw new KeywordError(
      KeywordErrorCode.InvalidCommand,
      `${action} takes exactly one term (quote it if it has spaces)`,
      {
        terms: term === undefined ? [] : [term, ...extra],
      },
    );
  }
  const target = parseScope(scope);
  const { ref, payload } = keywordCommand({
    command: action,
    scope: target.scope,
    ownerId: target.ownerId,
    term,
    requestedBy: by,
    ...(aliases.length > 0 ? { aliases } : {}),
    ...(weight !== undefined ? { weight } : {}),
  });
  return { action: 'control', ref, json, payload };
}
