/*
 * The utils model may add colour to an activity, never change it (ADR-0015): one short line, checked here before
 * it is recorded. A line that names another time, talks to the reader, or reads like a model is refused.
 */

export const WRITE_DETAIL_TOOL = {
  name: 'write_detail',
  description: '给正在做的事补一句具体细节',
  parameters: {
    type: 'object',
    properties: { detail: { type: 'string', description: '一句话，不超过40字，第一人称' } },
    required: ['detail'],
  },
} as const;

export function detailMessages(title: string, description: string): { role: 'system' | 'user'; content: string }[] {
  return [
    { role: 'system', content: '你在给一个人的日常补充一个小细节。调用 write_detail。只补细节，不改变在做的事。' },
    {
      role: 'user',
      content: `正在做的事：${title}\n说明：${description}\n\n写一句此刻的具体细节（第一人称，不超过40字，不提具体时间，不提别的安排）。`,
    },
  ];
}

const FORBIDDEN = [
  /(人工智能|AI|模型|机器人|助手)/i,
  /[0-9０-９]{1,2}[:：点]/,
  /https?:\/\//i,
  /[@#]/,
  /(你们|大家好|请)/,
];

export type DetailVerdict = { ok: true; detail: string } | { ok: false; reason: string };

export function validateDetail(raw: string): DetailVerdict {
  let detail: unknown;
  try {
    detail = (JSON.parse(raw) as { detail?: unknown }).detail;
  } catch (error) {
    return { ok: false, reason: `not JSON: ${(error as Error).message}` };
  }
  if (typeof detail !== 'string') return { ok: false, reason: 'detail is not a string' };
  const text = detail.trim();
  const length = [...text].length;
  if (length < 4 || length > 60) return { ok: false, reason: `length ${length} outside 4-60` };
  if (/\n/.test(text)) return { ok: false, reason: 'more than one line' };
  const hit = FORBIDDEN.find((pattern) => pattern.test(text));
  if (hit) return { ok: false, reason: `matches ${String(hit)}` };
  return { ok: true, detail: text };
}
