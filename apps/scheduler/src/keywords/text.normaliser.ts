/*
 * One normal form for lexicon terms and the text they are matched against, so "ＡＰＥＸ", "Apex" and "apex" are
 * one term. NFKC folds full-width Latin, digits and punctuation to half width (and ideographic space to a space);
 * lower-casing folds case; runs of whitespace become one space. Both sides go through the same function, which is
 * what makes offsets and hits agree.
 *
 * Simplified/traditional folding is optional (`foldScript`): a caller that has a converter (e.g. `opencc-js`'s
 * t→s) passes it; without one the normaliser leaves the script alone (ADR-0020 says why it is off by default).
 */

export interface NormaliseOptions {
  /** Maps traditional characters to simplified ones (or any other script folding); applied after NFKC. */
  foldScript?: (text: string) => string;
}

const WHITESPACE = /\s+/gu;

export function normaliseText(text: string, options: NormaliseOptions = {}): string {
  if (!options.foldScript && isAlreadyNormal(text)) return text;
  let out = text.normalize('NFKC').toLowerCase();
  if (options.foldScript) out = options.foldScript(out);
  return out.replace(WHITESPACE, ' ').trim();
}

/** True for code units of ASCII letters and digits: a Latin term must not hit inside a longer Latin word. */
export function isAsciiWordUnit(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x7a);
}

/**
 * The common case, checked in one cheap pass: only CJK ideographs, lower-case printable ASCII and single inner
 * spaces, which NFKC, lower-casing and whitespace folding all leave as they are.
 */
function isAlreadyNormal(text: string): boolean {
  const last = text.length - 1;
  for (let i = 0; i <= last; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x4e00 && c <= 0x9fff) continue;
    if (c > 0x20 && c < 0x7f) {
      if (c >= 0x41 && c <= 0x5a) return false;
      continue;
    }
    if (c === 0x20 && i > 0 && i < last && text.charCodeAt(i - 1) !== 0x20) continue;
    return false;
  }
  return true;
}
