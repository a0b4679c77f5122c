import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Jieba } from '@node-rs/jieba';

/*
 * Search terms for Chinese chat text. Postgres' parsers do not segment CJK, so text is cut into words with jieba
 * (search mode: 图书馆 also yields 图书) and stored space-separated; `to_tsvector('simple', terms)` then indexes
 * each word as a lexeme. The same function cuts queries, so a question and the message it recalls agree on words.
 * Deterministic for a given dictionary (the package's own), which is what replay needs.
 */

const require = createRequire(import.meta.url);
let jieba: Jieba | undefined;

function segmenter(): Jieba {
  if (!jieba) {
    const { Jieba: JiebaClass } = require('@node-rs/jieba') as typeof import('@node-rs/jieba');
    // The package's dictionary file, read here rather than through its `dict` module: that module also reads the
    // 6 MB IDF table nobody here uses and keeps both buffers for the life of the process (≈ 11 MB); jieba copies
    // the dictionary into its own tables, so this buffer is garbage once it is built.
    jieba = JiebaClass.withDict(readFileSync(require.resolve('@node-rs/jieba/dict.txt')));
  }
  return jieba;
}

/** The process's one jieba instance with the package's dictionary (loaded once: the keyword lexicon cuts with it too). */
export function sharedJieba(): Jieba {
  return segmenter();
}

/**
 * Load the dictionary now (about half a second of CPU and a few tens of MB): an app that segments text calls this
 * at boot, so its first message does not wait for it.
 */
export function warmSegmenter(): void {
  segmenter().cut('预热', false);
}

/** A word worth indexing: letters or digits of any script; punctuation, symbols and spaces are not. */
const WORD = /[\p{L}\p{N}]/u;

/** Words of `text`, lower-cased, each once, in first-seen order. */
export function searchWords(text: string): string[] {
  if (text.trim() === '') return [];
  const seen = new Set<string>();
  for (const raw of segmenter().cutForSearch(text, true)) {
    const word = raw.trim().toLowerCase();
    if (word.length > 0 && word.length <= 32 && WORD.test(word) && !word.includes("'") && !word.includes('\\')) {
      seen.add(word);
    }
  }
  return [...seen];
}

/** The `terms` column: search words joined by spaces. */
export function searchTerms(text: string): string {
  return searchWords(text).join(' ');
}
