import type { OneBotMessage, OneBotSegment } from './onebot-types.js';

/** CQ code escaping (OneBot v11 message/string.md): `&`, `[`, `]` everywhere, and `,` inside parameters. */
export function escapeCqText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/\[/g, '&#91;').replace(/]/g, '&#93;');
}

export function escapeCqParam(value: string): string {
  return escapeCqText(value).replace(/,/g, '&#44;');
}

/** A segment parsed from a CQ string: every data value is a string. */
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

function dataText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

/** The CQ string of a segment list, as NapCat writes `raw_message`. */
export function toCqString(segments: OneBotSegment[]): string {
  return segments
    .map((segment) => {
      if (segment.type === 'text') return escapeCqText(dataText(segment.data.text));
      const params = Object.entries(segment.data)
        .filter(([, value]) => value !== undefined && value !== null)
        .map(([key, value]) => `,${key}=${escapeCqParam(dataText(value))}`)
        .join('');
      return `[CQ:${segment.type}${params}]`;
    })
    .join('');
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
    for (const pair of (match[2] ?? '').split(',').slice(1)) {
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

export function toSegments(message: OneBotMessage): OneBotSegment[] {
  return typeof message === 'string' ? parseCqString(message) : message;
}

/**
 * Plain text a person would read: text as is, `@name` (or `@qq`) for mentions, and a bracketed tag for anything
 * else (`[回复:123]`, `[图片]`). Used by test doubles and the simulator to show what the bot said.
 */
export function renderPlainText(message: OneBotMessage): string {
  return toSegments(message)
    .map((segment) => {
      switch (segment.type) {
        case 'text':
          return dataText(segment.data.text);
        case 'at':
          return `@${dataText(segment.data.name) || dataText(segment.data.qq)}`;
        case 'reply':
          return `[回复:${dataText(segment.data.id)}]`;
        case 'face':
          return '[表情]';
        case 'image':
          return '[图片]';
        default:
          return `[${segment.type}]`;
      }
    })
    .join('');
}
