/** Read-model rows of attention (issue 7): threads and the group actor. */

export type ThreadStatus = 'live' | 'idle';

export interface ThreadRow {
  threadId: string;
  groupId: string | null;
  startedAt: Date | null;
  lastActivityAt: Date | null;
  participants: string[] | null;
  messages: number | null;
  botJoined: boolean | null;
  lastBotReplyAt: Date | null;
  openQuestions: { eventId: string; senderId: string; askedAt: string; text: string }[] | null;
  status: ThreadStatus | null;
  /** Why its newest message joined it (`new`, `reply`, `at`, `speaker`, `overlap`, `flow`, `bot`). */
  lastLink: string | null;
  idleAt: Date | null;
  version: number | null;
}

export interface GroupActorRow {
  groupId: string;
  lastBotReplyAt: Date | null;
  lastPartnerId: string | null;
  repliesInWindow: number | null;
  budget: number | null;
  cooldownUntil: Date | null;
  activeThreads: string[] | null;
  activeEvents: number | null;
  reason: string | null;
  updatedAt: Date | null;
  version: number | null;
}
