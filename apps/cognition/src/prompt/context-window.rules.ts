import type { HistoryEntry } from '../episodes/episode-state.js';

/*
 * Maisaka's context selection: only real chat messages and the planner's own thoughts take room in the window;
 * tool calls, tool results, references and perceptions ride along free. The window's start moves only when it
 * has grown to twice the limit, and then jumps to keep exactly the limit — so between cuts every request starts
 * with the same messages and providers' prompt caches hit. The earliest half of the planner's thoughts in the
 * window is hidden (its tool calls stay, so every tool result still has its call).
 */

export function countsTowardWindow(entry: HistoryEntry): boolean {
  return entry.kind === 'message' || entry.kind === 'thought';
}

/** Where the window starts now: `start` unless the window has grown past 2 × `limit`, then cut back to `limit`. */
export function windowStart(history: readonly HistoryEntry[], start: number, limit: number): number {
  let counted = 0;
  for (let i = start; i < history.length; i++) if (countsTowardWindow(history[i]!)) counted++;
  if (counted <= 2 * limit) return start;
  let keep = 0;
  for (let i = history.length - 1; i >= start; i--) {
    if (!countsTowardWindow(history[i]!)) continue;
    keep++;
    if (keep === limit) return i;
  }
  return start;
}

/** The entries the planner sees from `start`: the earliest half of thoughts hidden, orphaned tool results dropped. */
export function windowEntries(history: readonly HistoryEntry[], start: number): HistoryEntry[] {
  const entries = history.slice(start);
  const thoughts = entries.filter((e) => e.kind === 'thought').length;
  let toHide = Math.floor(thoughts / 2);
  const calls = new Set<string>();
  const out: HistoryEntry[] = [];
  for (const entry of entries) {
    if (entry.kind === 'thought' && toHide > 0) {
      toHide--;
      continue;
    }
    if (entry.kind === 'tool_call') {
      entry.calls.forEach((c) => calls.add(c.id));
      if (toHide > 0 && entry.content !== '') {
        toHide--;
        out.push({ ...entry, content: '' });
        continue;
      }
    }
    if (entry.kind === 'tool_result' && !calls.has(entry.callId)) continue;
    out.push(entry);
  }
  return out;
}
