/**
 * Cutting one reply into the chat messages outbound sends. A reply goes out whole when it fits; a longer one is
 * cut where a person would break it: at a line break, else after a sentence end, else after a pause (comma,
 * space), and only as a last resort mid-sentence, never inside a character (surrogate pair, emoji sequence).
 * The number of messages is capped so a runaway reply cannot flood a group; what does not fit goes into the last.
 */

export interface SplitOptions {
  /** Longest message in UTF-16 code units (`QUNLI_SEND_MAX_SEGMENT_CHARS`). */
  maxChars: number;
  /** Most messages one reply becomes; the last one takes the rest of the text. */
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

/**
 * Split `text` into at most `maxSegments` parts, each at most `maxChars` long except possibly the last (which
 * takes whatever did not fit). Whitespace at the cuts is dropped; no other character is lost or reordered. An
 * empty or blank text gives no parts.
 */
export function splitReply(text: string, options: SplitOptions): string[] {
  const max = options.maxChars;
  const maxSegments = options.maxSegments ?? DEFAULT_MAX_SEGMENTS;
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxChars must be a positive integer, got ${max}`);
  if (!Number.isInteger(maxSegments) || maxSegments < 1) {
    throw new RangeError(`maxSegments must be a positive integer, got ${maxSegments}`);
  }
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > max && parts.length < maxSegments - 1) {
    const cut = chooseCut(rest, max);
    const part = rest.slice(0, cut).trimEnd();
    if (part.length > 0) parts.push(part);
    rest = rest.slice(cut).trimStart();
  }
  if (rest.length > 0) parts.push(rest);
  return parts;
}

/** One message outbound will send for an action. */
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
