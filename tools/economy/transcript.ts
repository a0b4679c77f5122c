import { QunliError } from '@app/contracts';

/** One line of a transcript: a OneBot v11 event as an implementation posts it. */
export interface TranscriptLine {
  line: number;
  /** The event's OneBot `time` (epoch seconds). */
  time: number;
  event: Record<string, unknown>;
}

/**
 * Parse a JSON Lines transcript: one event object per line with a numeric `time`, in time order. Blank lines are
 * skipped; anything else wrong is an error naming the line.
 */
export function parseTranscript(text: string, source = 'transcript'): TranscriptLine[] {
  const lines: TranscriptLine[] = [];
  let previous = -Infinity;
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    let event: unknown;
    try {
      event = JSON.parse(raw);
    } catch (error) {
      throw new QunliError('ECONOMY.BAD_TRANSCRIPT', `${source}:${line} is not JSON: ${(error as Error).message}`, {
        line,
      });
    }
    if (typeof event !== 'object' || event === null || Array.isArray(event)) {
      throw new QunliError('ECONOMY.BAD_TRANSCRIPT', `${source}:${line} is not a JSON object`, { line });
    }
    const time = (event as { time?: unknown }).time;
    if (typeof time !== 'number' || !Number.isFinite(time)) {
      throw new QunliError('ECONOMY.BAD_TRANSCRIPT', `${source}:${line} has no numeric "time"`, { line });
    }
    if (time < previous) {
      throw new QunliError('ECONOMY.BAD_TRANSCRIPT', `${source}:${line} goes back in time (${time} < ${previous})`, {
        line,
      });
    }
    previous = time;
    lines.push({ line, time, event: event as Record<string, unknown> });
  });
  if (lines.length === 0) throw new QunliError('ECONOMY.BAD_TRANSCRIPT', `${source} has no events`);
  return lines;
}

export function toJsonLines(events: Record<string, unknown>[]): string {
  return events.map((e) => JSON.stringify(e)).join('\n') + '\n';
}
