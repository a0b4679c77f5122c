import type { HistoryEntry } from '../episodes/episode-state.js';
import { windowEntries, windowStart } from './context-window.rules.js';

const msg = (i: number): HistoryEntry => ({
  kind: 'message',
  eventId: `e${i}`,
  messageId: `${i}`,
  userId: '1',
  name: 'a',
  text: `m${i}`,
  sentAt: i,
  fromSelf: false,
});

describe('context window', () => {
  it('grows to twice the limit, then cuts back to the limit, so the prefix stays stable between cuts', () => {
    const history: HistoryEntry[] = [];
    let start = 0;
    const starts: number[] = [];
    for (let i = 0; i < 30; i++) {
      history.push(msg(i), { kind: 'tool_result', callId: 'x', tool: 't', text: 'free' });
      start = windowStart(history, start, 5);
      starts.push(start);
    }
    // Unchanged until 11 counted messages (> 2 × 5), then jumps to keep 5; and so on.
    expect(starts.slice(0, 10).every((s) => s === 0)).toBe(true);
    expect(starts[10]).toBe(12);
    expect(new Set(starts).size).toBeLessThan(6);
    const counted = history.slice(starts[10], 22).filter((e) => e.kind === 'message').length;
    expect(counted).toBe(5);
  });

  it('does not count tool results, references and perceptions', () => {
    const history: HistoryEntry[] = [msg(1), msg(2)];
    for (let i = 0; i < 50; i++) history.push({ kind: 'reference', text: 'r' }, { kind: 'perception', text: 'p' });
    expect(windowStart(history, 0, 1)).toBe(0);
  });

  it('hides the earliest half of the thoughts, keeps tool calls, and drops results whose call is outside', () => {
    const history: HistoryEntry[] = [
      { kind: 'tool_result', callId: 'old', tool: 't', text: 'orphan' },
      msg(1),
      { kind: 'thought', text: 'first' },
      { kind: 'thought', text: 'second' },
      { kind: 'tool_call', content: 'call thought', calls: [{ id: 'c1', name: 't', arguments: '{}' }] },
      { kind: 'tool_result', callId: 'c1', tool: 't', text: 'result' },
      { kind: 'thought', text: 'third' },
      { kind: 'thought', text: 'fourth' },
    ];
    const shown = windowEntries(history, 0);
    expect(shown.filter((e) => e.kind === 'thought').map((e) => (e as { text: string }).text)).toEqual([
      'third',
      'fourth',
    ]);
    expect(shown.some((e) => e.kind === 'tool_call')).toBe(true);
    expect(shown.filter((e) => e.kind === 'tool_result').map((e) => (e as { callId: string }).callId)).toEqual(['c1']);
  });
});
