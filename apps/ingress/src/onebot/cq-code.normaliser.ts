/**
 * The OneBot v11 string message format ("CQ codes"): `复读机[CQ:face,id=120]`. Plain text escapes `&`, `[` and `]`;
 * parameter values additionally escape `,`. Parsing turns a CQ string into array-format segments with every value a
 * string, so the rest of ingress sees one format.
 */

export interface CqSegment {
  type: string;
  data: Record<string, string>;
}

const TEXT_ENTITIES: Record<string, string> = { '&amp;': '&', '&#91;': '[', '&#93;': ']' };
const PARAM_ENTITIES: Record<string, string> = { ...TEXT_ENTITIES, '&#44;': ',' };

/** Decode plain text between CQ codes. One pass, so `&amp;#91;` stays the literal `&#91;`. */
export function unescapeCqText(text: string): string {
  return text.replace(/&(?:amp|#91|#93);/g, (entity) => TEXT_ENTITIES[entity] ?? entity);
}

/** Decode one CQ parameter value. */
export function unescapeCqParam(value: string): string {
  return value.replace(/&(?:amp|#91|#93|#44);/g, (entity) => PARAM_ENTITIES[entity] ?? entity);
}

// A well-formed code: `[CQ:type` then `,key=value` pairs, where no part holds a raw `,`, `[` or `]`. Anything
// else that merely looks like a code (an unclosed `[CQ:`) is kept as text, as implementations render it.
const CQ_CODE = /\[CQ:([^,[\]]+)((?:,[^,[\]]*)*)\]/g;

/** Parse a CQ string into segments. Text runs become `text` segments; empty runs are dropped. */
export function parseCqString(message: string): CqSegment[] {
  const segments: CqSegment[] = [];
  const pushText = (raw: string): void => {
    if (raw.length > 0) segments.push({ type: 'text', data: { text: unescapeCqText(raw) } });
  };
  let last = 0;
  for (const match of message.matchAll(CQ_CODE)) {
    pushText(message.slice(last, match.index));
    last = match.index + match[0].length;
    const data: Record<string, string> = {};
    const params = match[2] ?? '';
    for (const pair of params.split(',').slice(1)) {
      const eq = pair.indexOf('=');
      const key = eq === -1 ? pair : pair.slice(0, eq);
      if (key.length === 0) continue;
      data[key] = eq === -1 ? '' : unescapeCqParam(pair.slice(eq + 1));
    }
    segments.push({ type: (match[1] ?? '').trim(), data });
  }
  pushText(message.slice(last));
  return segments;
}
