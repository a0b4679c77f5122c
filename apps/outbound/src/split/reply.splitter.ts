/**
 * Cutting one reply into the chat messages outbound sends, where a person would break it: at a line break, else
 * after a sentence end, else after a pause (comma, space), and only as a last resort mid-sentence, never inside
 * a character (surrogate pair, emoji sequence). The number of messages is capped so a runaway reply cannot flood
 * a group; nothing is lost.
 */

export interface SplitOptions {
  /** Longest message in UTF-16 code units (`QUNLI_SEND_MAX_SEGMENT_CHARS`). */
  maxChars: number;
  /** Most messages one reply becomes (`QUNLI_SEND_MAX_MESSAGES`). */
  maxSegments?: number;
}

export const DEFAULT_MAX_SEGMENTS = 5;

const SENTENCE_ENDS = new Set(['。', '！', '？', '!', '?', '…']);
/** Closing marks that belong to the sentence they end: `“好的！”` is cut after the quote, not before it. */
const CLOSERS = new Set(['”', '’', '」', '』', '）', ')', '】', '"', "'", '》', '~', '～']);
const PAUSES = new Set(['，', ',', '、', '；', ';', '：', ':', ' ', '\t']);

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The largest grapheme boundary ≤ `limit` (so an emoji or a surrogate pair is never cut), at least one grapheme. */
function graphemeBoundary(text: string, limit: number): number {
  let boundary = 0;
  for (const { index, segment } of graphemes.segment(text)) {
    const end = index + segment.length;
    if (end > limit) return boundary > 0 ? boundary : end;
    boundary = end;
  }
  return boundary;
}

/** Index just after the last sentence end (plus its closers) in `window`, or -1. */
function lastSentenceEnd(window: string): number {
  for (let i = window.length - 1; i >= 0; i--) {
    if (!SENTENCE_ENDS.has(window[i]!)) continue;
    let end = i + 1;
    while (end < window.length && (SENTENCE_ENDS.has(window[end]!) || CLOSERS.has(window[end]!))) end++;
    return end;
  }
  return -1;
}

function lastOf(window: string, marks: Set<string>): number {
  for (let i = window.length - 1; i >= 0; i--) if (marks.has(window[i]!)) return i + 1;
  return -1;
}

/** Where to cut `text` (longer than `max`) so the first part is at most `max` code units. */
function chooseCut(text: string, max: number): number {
  const limit = graphemeBoundary(text, max);
  const window = text.slice(0, limit);
  const half = Math.floor(limit / 2);
  const newline = window.lastIndexOf('\n') + 1;
  const sentence = lastSentenceEnd(window);
  const pause = lastOf(window, PAUSES);
  // A break late in the window keeps messages long; an early one is still better than cutting mid-sentence.
  for (const cut of [newline, sentence, pause]) if (cut > half) return cut;
  for (const cut of [newline, sentence]) if (cut > 0) return cut;
  return limit;
}

/** Cut one line (no line breaks) into parts of at most `max` code units: after sentence ends, else pauses. */
function cutLine(line: string, max: number): string[] {
  const parts: string[] = [];
  let rest = line.trim();
  while (rest.length > max) {
    const cut = chooseCut(rest, max);
    const part = rest.slice(0, cut).trimEnd();
    if (part.length > 0) parts.push(part);
    rest = rest.slice(cut).trimStart();
  }
  if (rest.length > 0) parts.push(rest);
  return parts;
}

/** Join adjacent parts (the shortest pair first) until at most `maxParts` remain; nothing is dropped. */
function capParts(parts: string[], maxParts: number, joiner: (a: string, b: string) => string): string[] {
  const out = parts.slice();
  while (out.length > maxParts) {
    let best = 0;
    for (let i = 1; i < out.length - 1; i++) {
      if (out[i]!.length + out[i + 1]!.length < out[best]!.length + out[best + 1]!.length) best = i;
    }
    out.splice(best, 2, joiner(out[best]!, out[best + 1]!));
  }
  return out;
}

/**
 * The reply path's splitting (oh-mai-agent `split_message`, docs/adr/0009): a reply with line breaks goes out
 * line by line (as a person types), a line longer than `maxChars` cut after its sentence ends; a reply without
 * line breaks goes out whole when it fits, else cut after sentence ends. At most `maxSegments` messages: past
 * that, neighbouring messages are joined (the shortest pair first), and what still does not fit stays in the
 * joined message, so no content is ever lost. Whitespace at the cuts is dropped, nothing else.
 */
export function splitReply(text: string, options: SplitOptions): string[] {
  const max = options.maxChars;
  const maxSegments = options.maxSegments ?? DEFAULT_MAX_SEGMENTS;
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxChars must be a positive integer, got ${max}`);
  if (!Number.isInteger(maxSegments) || maxSegments < 1) {
    throw new RangeError(`maxSegments must be a positive integer, got ${maxSegments}`);
  }
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  if (lines.length === 0) return [];
  const multiline = lines.length > 1;
  const parts = lines.flatMap((line) => cutLine(line, max));
  // Lines were separate messages; joined back they keep their line break. Pieces of one line join directly.
  return capParts(parts, maxSegments, (a, b) => (multiline ? `${a}\n${b}` : `${a}${needsSpace(a, b) ? ' ' : ''}${b}`));
}

function needsSpace(a: string, b: string): boolean {
  return /[A-Za-z0-9]$/.test(a) && /^[A-Za-z0-9]/.test(b);
}

/** One message outbound sends for an action. */
export interface PlannedSegment {
  index: number;
  count: number;
  text: string;
  /** Only the first message quotes the message being answered; quoting every part would look like spam. */
  quoteMessageId?: string;
}

export function planSegments(text: string, options: SplitOptions & { quoteMessageId?: string }): PlannedSegment[] {
  const parts = splitReply(text, options);
  return parts.map((part, index) => ({
    index,
    count: parts.length,
    text: part,
    ...(index === 0 && options.quoteMessageId !== undefined && { quoteMessageId: options.quoteMessageId }),
  }));
}
