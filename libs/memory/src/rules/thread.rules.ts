import { createHash } from 'node:crypto';

/*
 * Threads for memory (ADR-0016). The attention issue will put a `threadId` on message events; until then a group's
 * messages form one thread at a time, and a quiet gap longer than QUNLI_MEMORY_THREAD_GAP_MINUTES starts the next.
 * A fallback thread is named after (a hash of) its first message, so a redelivered message lands in the same
 * thread, and the name reveals nothing of the message once it is erased.
 */

export interface GroupThread {
  threadId: string;
  /** Product ms of the newest message. */
  lastAt: number;
}

export function threadFor(
  explicitThreadId: string | undefined,
  current: GroupThread | null,
  eventId: string,
  atMs: number,
  gapMs: number,
): string {
  if (explicitThreadId !== undefined && explicitThreadId !== '') return explicitThreadId;
  if (current && atMs - current.lastAt <= gapMs) return current.threadId;
  return `auto-${createHash('sha256').update(eventId).digest('hex').slice(0, 20)}`;
}

/** Every N messages a chunk is due: when the ordinal reaches a multiple of N. */
export function chunkDue(ordinal: number, every: number): boolean {
  return ordinal > 0 && ordinal % every === 0;
}

/** BullMQ job ids may not contain `:`; thread ids come from outside, so they are hashed in. */
export function jobKey(...parts: string[]): string {
  let hash = 0x811c9dc5;
  const text = parts.join('\u0000');
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return `${parts.map((p) => p.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40)).join('-')}-${(hash >>> 0).toString(36)}`;
}
