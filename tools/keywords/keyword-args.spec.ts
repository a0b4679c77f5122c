import { KeywordErrorCode } from '../../apps/scheduler/src/keywords/keyword.errors.js';
import { parseKeywordArgs } from './keyword-args.js';

describe('npm run keywords arguments', () => {
  it('builds a control request for a term in a group', () => {
    expect(
      parseKeywordArgs(['pin', '原神', '--scope', 'group:123456', '--alias', 'genshin', '--weight', '0.9', '--json']),
    ).toEqual({
      action: 'control',
      json: true,
      ref: { scope: 'group', ownerId: '123456' },
      payload: {
        command: 'pin',
        scope: 'group',
        ownerId: '123456',
        term: '原神',
        aliases: ['genshin'],
        weight: 0.9,
        requestedBy: 'cli',
      },
    });
    expect(parseKeywordArgs(['suppress', '草', '--scope', 'global'])).toMatchObject({
      ref: { scope: 'global', ownerId: '' },
    });
    expect(parseKeywordArgs(['list', '--scope', 'thread:123/t9'])).toMatchObject({ action: 'list' });
  });

  it('refuses what the lexicon would refuse, with stable codes', () => {
    const code = (argv: string[]) => {
      try {
        parseKeywordArgs(argv);
        return 'accepted';
      } catch (error) {
        return (error as { code: string }).code;
      }
    };
    expect(code(['pin', '原神'])).toBe(KeywordErrorCode.InvalidScope);
    expect(code(['pin', '原神', '--scope', 'planet:1'])).toBe(KeywordErrorCode.InvalidScope);
    expect(code(['pin', '原神', '--scope', 'group'])).toBe(KeywordErrorCode.InvalidScope);
    expect(code(['pin', '原神', '--scope', 'thread:t9'])).toBe(KeywordErrorCode.InvalidScope);
    expect(code(['star', '原神', '--scope', 'global'])).toBe(KeywordErrorCode.InvalidCommand);
    expect(code(['pin', '--scope', 'global'])).toBe(KeywordErrorCode.InvalidCommand);
    expect(code(['pin', '原神', '--scope', 'global', '--weight', '3'])).toBe(KeywordErrorCode.InvalidCommand);
    expect(code(['pin', '原神', '--scope', 'global', '--colour', 'red'])).toBe(KeywordErrorCode.InvalidCommand);
    expect(code(['add', ' ', '--scope', 'global'])).toBe(KeywordErrorCode.InvalidTerm);
  });
});
