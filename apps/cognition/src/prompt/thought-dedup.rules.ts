import { distance } from 'fastest-levenshtein';

/** Above this similarity to the previous thought, a thought is replaced by the reflection prompt (Maisaka). */
export const THOUGHT_SIMILARITY_LIMIT = 0.9;

export const REFLECTION_PROMPT =
  '我应该根据我上面思考的内容进行反思：刚才的想法和上一轮几乎一样，不要原地打转。换个角度想想，或者直接做出决定（回复、等待或不说话）。';

/** 1 − edit distance / longer length, over whitespace-collapsed text: 1 is identical, 0 shares nothing. */
export function similarity(a: string, b: string): number {
  const x = a.replace(/\s+/g, ' ').trim();
  const y = b.replace(/\s+/g, ' ').trim();
  if (x.length === 0 && y.length === 0) return 1;
  const longer = Math.max(x.length, y.length);
  return 1 - distance(x, y) / longer;
}

/** The thought to keep in the history: the model's own, or the reflection prompt when it repeats itself. */
export function dedupThought(
  thought: string,
  previous: string | null,
): { text: string; replaced: boolean; similarity: number } {
  if (previous === null || thought.trim() === '') return { text: thought, replaced: false, similarity: 0 };
  const score = similarity(thought, previous);
  return score > THOUGHT_SIMILARITY_LIMIT
    ? { text: REFLECTION_PROMPT, replaced: true, similarity: score }
    : { text: thought, replaced: false, similarity: score };
}
