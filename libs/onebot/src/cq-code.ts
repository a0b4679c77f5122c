import type { OneBotMessage, OneBotSegment } from './onebot-types.js';

/** CQ code escaping (OneBot v11 message/string.md): `&`, `[`, `]` everywhere, and `,` inside parameters. */
export function escapeCqText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/\[/g, '&#91;').replace(/]/g, '&#93;');
}

export function escapeCqParam(value: string): string {
  return escapeCqText(value).replace(/,/g, '&#44;');
}

export function unescapeCq(text: string): string {
  return text.replace(/&#44;/g, ',').replace(/&#91;/g, '[').replace(/&#93;/g, ']').replace(/&amp;/g, '&');
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

/** Parse a CQ string into array segments (every data value a string). */
export function parseCqString(message: string): OneBotSegment[] {
  const segments: OneBotSegment[] = [];
  const pattern = /\[CQ:([a-zA-Z0-9_.-]+)((?:,[^,\]=]+=[^,\]]*)*)\]/g;
  let last = 0;
  for (const match of message.matchAll(pattern)) {
    if (match.index > last)
      segments.push({ type: 'text', data: { text: unescapeCq(message.slice(last, match.index)) } });
    const data: Record<string, string> = {};
    for (const param of (match[2] ?? '').split(',').slice(1)) {
      const eq = param.indexOf('=');
      data[param.slice(0, eq)] = unescapeCq(param.slice(eq + 1));
    }
    segments.push({ type: match[1] ?? 'unknown', data });
    last = match.index + match[0].length;
  }
  if (last < message.length) segments.push({ type: 'text', data: { text: unescapeCq(message.slice(last)) } });
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
