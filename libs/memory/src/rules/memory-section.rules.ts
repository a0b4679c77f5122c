import type { RecalledMessage } from '../stores/memory.views.js';
import type { StoredFact } from '../stores/memory.views.js';
import type { StoredJargon } from '../stores/memory.views.js';
import type { StoredSummary } from '../stores/memory.views.js';
import { ago, dateTime } from './time-text.rules.js';

/*
 * How memory reads in a prompt: short lines of data, never instructions. Cognition adds each section's header
 * (【相关记忆】, 【当前消息发送者】, 黑话) and treats the text as material.
 */

const CATEGORY_WORDS: Record<string, string> = {
  profile: '',
  preference: '喜好',
  relationship: '关系',
  promise: '答应过',
  event: '经历',
};

function clip(text: string, max: number): string {
  const chars = [...text.replace(/\s+/g, ' ').trim()];
  return chars.length > max ? `${chars.slice(0, max).join('')}…` : chars.join('');
}

export function factLine(f: StoredFact, withSubject: boolean): string {
  const kind = CATEGORY_WORDS[f.category] ? `（${CATEGORY_WORDS[f.category]}）` : '';
  const doubt = f.status === 'disputed' ? '，有出入' : '';
  const who = withSubject ? `${f.subjectName}：` : '';
  return `- ${who}${f.key}${kind}：${f.value}（把握 ${Math.round(f.confidence * 100)}%${doubt}）`;
}

export interface MemorySectionInput {
  summary: StoredSummary | null;
  related: StoredSummary[];
  facts: StoredFact[];
  messages: RecalledMessage[];
  now: Date;
  timezone: string;
  selfName: string;
}

/** 【相关记忆】: this thread's summary, older related threads, relevant facts, older messages found by search. */
export function memorySection(input: MemorySectionInput): string | null {
  const lines: string[] = [];
  if (input.summary) lines.push(`这段话题的摘要：${clip(input.summary.summary, 400)}`);
  for (const s of input.related) {
    lines.push(`以前聊过（${dateTime(s.lastMessageAt, input.timezone)}）：${clip(s.summary, 200)}`);
  }
  if (input.facts.length > 0) {
    lines.push('记得的事：');
    for (const f of input.facts) lines.push(factLine(f, true));
  }
  if (input.messages.length > 0) {
    lines.push('以前的聊天：');
    for (const m of [...input.messages].sort((a, b) => a.sentAt.getTime() - b.sentAt.getTime())) {
      const who = m.fromSelf ? `${input.selfName}（你自己）` : m.displayName;
      lines.push(`- ${ago(m.sentAt, input.now)} ${who}：${clip(m.text, 120)}`);
    }
  }
  return lines.length > 0 ? lines.join('\n') : null;
}

export interface SenderSectionInput {
  userId: string;
  name: string;
  presence: { messages: number; firstAt: Date | null };
  facts: StoredFact[];
  timezone: string;
}

/** 【当前消息发送者】: what the bot knows about the sender in this group. */
export function senderSection(input: SenderSectionInput): string | null {
  if (input.facts.length === 0 && input.presence.messages === 0) return null;
  const lines = [
    `${input.name}（QQ ${input.userId}）` +
      (input.presence.messages > 0 && input.presence.firstAt
        ? `：在这个群说过 ${input.presence.messages} 条话，最早在 ${dateTime(input.presence.firstAt, input.timezone)}`
        : ''),
  ];
  if (input.facts.length > 0) {
    lines.push('记得关于 TA 的事：');
    for (const f of input.facts) lines.push(factLine(f, false));
  }
  return lines.join('\n');
}

/** Group words matched in the message, with their learned meanings. */
export function jargonSection(terms: StoredJargon[]): string | null {
  if (terms.length === 0) return null;
  return terms.map((t) => `- ${t.term}：${clip(t.meaning, 80)}（这个群的说法）`).join('\n');
}
