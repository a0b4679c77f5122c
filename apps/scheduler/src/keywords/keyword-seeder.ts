import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { isTransientError } from '@app/event-bus';
import { PersonaPolicy, personaVersionOf } from '@app/persona';
import { Clock } from '@app/platform';
import { candidateWords } from './candidate-extraction.js';
import { GLOBAL_SET, seedInterests } from './keyword-learning.js';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { keywordEvents, LexiconDraft } from './lexicon-draft.js';
import { DEFAULT_LEXICON_POLICY, setKeyOf } from './lexicon.rules.js';

const ATTEMPTS = 5;

/**
 * Seeds the persona's interests into the global set at start, once per persona version: replicas starting
 * together agree through the done marker and the set's version check.
 */
@Injectable()
export class KeywordSeeder implements OnApplicationBootstrap {
  private readonly logger = new Logger('keywords');

  constructor(
    private readonly store: KeywordLexiconStore,
    private readonly persona: PersonaPolicy,
    private readonly clock: Clock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.seed();
  }

  async seed(): Promise<number> {
    const doneId = `seed:${personaVersionOf(this.persona)}`;
    for (let attempt = 1; ; attempt++) {
      if (await this.store.isDone(doneId)) return 0;
      const loaded = await this.store.loadSets([setKeyOf(GLOBAL_SET)]);
      const expected = new Map([...loaded].map(([key, set]) => [key, set.meta?.version ?? 0]));
      const draft = new LexiconDraft(loaded);
      const now = this.clock.nowMs();
      seedInterests(draft, interestTerms(this.persona.interests), now, DEFAULT_LEXICON_POLICY);
      const commit = draft.commit(now);
      try {
        await this.store.commit(doneId, commit, expected, keywordEvents(commit, doneId, undefined, now));
        if (commit.changes.length > 0) this.logger.log(`seeded ${commit.changes.length} persona interest terms`);
        return commit.changes.length;
      } catch (error) {
        if (!isTransientError(error) || attempt >= ATTEMPTS) throw error;
      }
    }
  }
}

/** Before the first comma or bracket: "猫（尤其是楼下的橘猫芋圆）" → "猫". */
const HEAD = /^[^（(，,、：:；;。\s]{1,4}(?=[（(，,、：:；;。\s]|$)/u;

/**
 * The keywords of the persona's interests. Interests are written as descriptions ("做饭和探店，最近在研究宿舍小锅能
 * 煮什么"), which would never hit as a whole: each gives its head and the words jieba finds in it (做饭, 探店, 宿舍, 小锅).
 */
export function interestTerms(interests: readonly string[]): string[] {
  const out = new Set<string>();
  for (const interest of interests) {
    const head = HEAD.exec(interest.trim())?.[0];
    if (head) out.add(head);
    for (const word of candidateWords(interest, 6)) out.add(word);
  }
  return [...out];
}
