import { EventKind, type EventOf } from '@app/contracts';
import type { GroupActorRow, ThreadRow } from './attention.rows.js';

/** What the attention fold writes, one patch at a time (the projection's `put`). */
export interface AttentionPatches {
  threads(patch: Partial<ThreadRow>): void;
  groupActors(patch: Partial<GroupActorRow>): void;
}

export type AttentionKind = 'thread.updated' | 'thread.idle' | 'group.actor.updated';

function timeOf(text: string | undefined): Date | null {
  if (text === undefined) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** Fold one attention fact: a thread's newest snapshot (idle ends it), or the group actor's. */
export function foldAttentionEvent(event: EventOf<AttentionKind>, out: AttentionPatches): void {
  switch (event.kind) {
    case EventKind.ThreadUpdated:
    case EventKind.ThreadIdle: {
      const p = (event as EventOf<'thread.updated' | 'thread.idle'>).payload;
      const idle = event.kind === EventKind.ThreadIdle;
      out.threads({
        threadId: p.threadId,
        groupId: event.groupId,
        startedAt: timeOf(p.startedAt),
        lastActivityAt: timeOf(p.lastActivityAt),
        participants: p.participants,
        messages: p.messages,
        botJoined: p.botJoined,
        lastBotReplyAt: timeOf(p.lastBotReplyAt),
        openQuestions: p.openQuestions.map((q) => ({ ...q })),
        status: idle ? 'idle' : 'live',
        lastLink: p.link,
        // The idle snapshot carries the thread's last version; it comes after the updates, so it wins the tie.
        version: p.version,
        ...(idle ? { idleAt: timeOf((p as EventOf<'thread.idle'>['payload']).idleAt) } : {}),
      });
      return;
    }
    case EventKind.GroupActorUpdated: {
      const p = (event as EventOf<'group.actor.updated'>).payload;
      if (event.groupId === null) return;
      out.groupActors({
        groupId: event.groupId,
        lastBotReplyAt: timeOf(p.lastBotReplyAt),
        lastPartnerId: p.lastPartnerId ?? null,
        repliesInWindow: p.repliesInWindow,
        budget: p.budget,
        cooldownUntil: timeOf(p.cooldownUntil),
        activeThreads: p.activeThreads,
        activeEvents: p.activeEvents,
        reason: p.reason,
        updatedAt: new Date(event.createdAt),
        version: p.version,
      });
      return;
    }
  }
}
