import { sharedJieba } from '@app/persistence';
import { isLowInformation } from './stopwords.js';
import { normaliseText } from './text.normaliser.js';

/*
 * Candidate keywords of one message or thread summary, cut by jieba (the same instance and dictionary as the
 * search terms). Nouns, names, places, English words and idioms are candidates, and so are the words its HMM finds
 * that the dictionary lacks: a group's neologisms (原神, 芋圆, 开黑). Where it still cuts one into single characters
 * tagged as nouns or fragments, a run of two to four of them is joined back. Stopwords and chatter never are.
 */

const CONTENT = /^(n[a-z]*|vn|eng|j|l|i|nz)$/u;
/** Single characters that may be half of a word jieba does not know. */
const FRAGMENT = /^(n[a-z]*|j|zg|ng|x?g|nz)$/u;
const MAX_WORD = 16;
const HAN = /\p{Script=Han}/u;

export function candidateWords(text: string, max = 8): string[] {
  if (text.trim() === '') return [];
  const out = new Set<string>();
  const add = (raw: string) => {
    const word = normaliseText(raw);
    const length = [...word].length;
    if (length >= 2 && length <= MAX_WORD && !isLowInformation(word)) out.add(word);
  };
  let run = '';
  const flush = () => {
    const length = [...run].length;
    if (length >= 2 && length <= 4) add(run);
    run = '';
  };
  for (const { word, tag } of sharedJieba().tag(text, true)) {
    const length = [...word].length;
    if (length === 1 && FRAGMENT.test(tag) && HAN.test(word)) {
      run += word;
      continue;
    }
    flush();
    // HMM tags the words the dictionary lacks `x`, like punctuation; Han characters tell them apart.
    if (length >= 2 && (CONTENT.test(tag) || (tag === 'x' && HAN.test(word)))) add(word);
  }
  flush();
  return [...out].slice(0, max);
}
