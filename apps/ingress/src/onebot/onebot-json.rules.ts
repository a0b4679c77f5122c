/**
 * How deep a OneBot input may nest its JSON. A real event is under ten levels deep (event → message → segment →
 * data → a forward's nodes …), and deeper ones are still answered by what the normaliser decides; a body of
 * thousands of `[[[[` is an attack or a bug, and code that walks it recursively (normalising, logging) overflows
 * its stack at a few thousand levels. Refused before it is parsed, well below that.
 */
export const MAX_JSON_DEPTH = 1000;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether the JSON text nests objects and arrays deeper than `max`, scanning the raw bytes once (brackets inside
 * strings do not count). Works on text that is not valid JSON too: the parser reports that afterwards.
 */
export function nestsDeeperThan(raw: Uint8Array | string, max: number): boolean {
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) depth--;
  }
  return false;
}
