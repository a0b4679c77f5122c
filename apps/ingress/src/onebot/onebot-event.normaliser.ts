import { EventKind, makeEvent, PRIORITY, type EventEnvelope } from '@app/contracts';
import { isRecord, readId, readTime, Rejection, reject, shown } from './onebot-fields.rules.js';
import type { Accepted, ConnectionSignal, Normalised, NormaliserSettings } from './onebot-input.js';
import { normaliseMessage } from './onebot-message.normaliser.js';
import { normaliseNotice, normaliseRequest } from './onebot-notice.normaliser.js';
import { wellFormed } from './well-formed.rules.js';

export { REJECT_REASONS, type PayloadProblem, type RejectReason } from './onebot-fields.rules.js';
export * from './onebot-input.js';

/**
 * One OneBot v11 event in, one decision out: accept it as one event of the log, ignore it with a reason, or
 * reject it naming the bad field. Pure: no clock, no I/O, no metrics; the intake records what this decides.
 *
 * Implementations differ (QUIRKS.md): ids arrive as numbers or digit strings, `message` as an array or a CQ string,
 * segment data values as strings, numbers, nulls or objects. Everything is normalised to strings here.
 */

export const POST_TYPES = ['message', 'message_sent', 'notice', 'request', 'meta_event'] as const;
export type PostType = (typeof POST_TYPES)[number];

/** The post type for metrics labels: one of the known ones, or `other` (bounded label set). */
export function postTypeLabel(input: unknown): PostType | 'other' {
  const postType = isRecord(input) ? input.post_type : undefined;
  return (POST_TYPES as readonly unknown[]).includes(postType) ? (postType as PostType) : 'other';
}

function connectionSignal(event: Record<string, unknown>): ConnectionSignal | undefined {
  const selfId = readId(event, 'self_id');
  const time = readTime(event);
  if (event.meta_event_type === 'heartbeat') {
    const status = isRecord(event.status) ? event.status : {};
    const signal: ConnectionSignal = { type: 'heartbeat', selfId, time };
    if (typeof status.online === 'boolean') signal.online = status.online;
    if (typeof status.good === 'boolean') signal.good = status.good;
    if (typeof event.interval === 'number' && Number.isSafeInteger(event.interval) && event.interval > 0) {
      signal.intervalMs = event.interval;
    }
    return signal;
  }
  if (event.meta_event_type === 'lifecycle') {
    return { type: 'lifecycle', selfId, time, online: event.sub_type !== 'disable' };
  }
  return undefined;
}

function decide(input: unknown, settings: NormaliserSettings): Normalised {
  if (!isRecord(input)) return reject('$', `must be a JSON object (got ${shown(input)})`);
  const postType = input.post_type;
  if (postType === undefined) {
    // On a WebSocket that also carries API calls, responses arrive between the events.
    if (!('action' in input) && ('retcode' in input || 'echo' in input)) return { ignore: 'api_response' };
    const action = typeof input.action === 'string' ? ` (this is an API request for ${input.action})` : '';
    return reject('post_type', `is required${action}`);
  }
  if (!(POST_TYPES as readonly unknown[]).includes(postType)) {
    return reject('post_type', `must be one of ${POST_TYPES.join(', ')} (got ${shown(postType)})`);
  }
  if (postType === 'meta_event') {
    const signal = connectionSignal(input);
    return signal ? { ignore: 'meta_event', signal } : { ignore: 'meta_event' };
  }
  const selfId = readId(input, 'self_id');
  if (settings.selfId !== undefined && selfId !== settings.selfId) return { ignore: 'other_account' };
  switch (postType as Exclude<PostType, 'meta_event'>) {
    case 'message':
      return normaliseMessage(input, selfId, settings, false);
    case 'message_sent':
      return normaliseMessage(input, selfId, settings, true);
    case 'notice':
      return normaliseNotice(input, selfId, settings);
    case 'request':
      return normaliseRequest(input, selfId, settings);
  }
}

export function normaliseOneBotEvent(input: unknown, settings: NormaliserSettings): Normalised {
  try {
    const decision = decide(input, settings);
    if (!('accept' in decision)) return decision;
    const { value: payload, repaired } = wellFormed(decision.accept.payload);
    if (repaired === 0) return decision;
    return { accept: { ...decision.accept, payload } as Accepted, repairedStrings: repaired };
  } catch (error) {
    if (error instanceof Rejection) return { reject: error.problem };
    throw error;
  }
}

function priorityOf(accepted: Accepted): number {
  switch (accepted.kind) {
    case EventKind.MessageDirect:
      return PRIORITY.direct;
    case EventKind.MessageRecalled:
      // A recall must overtake nothing but should not wait behind ambient chatter either: it cancels work.
      return PRIORITY.action;
    case EventKind.MessageObserved:
      return PRIORITY.normal;
    case EventKind.MessageEchoed:
    case EventKind.NoticeReceived:
    case EventKind.RequestReceived:
      return PRIORITY.background;
  }
}

/** The envelope for an accepted input. `now` comes from the clock so replays stay deterministic. */
export function eventFor(accepted: Accepted, now: Date): EventEnvelope {
  return makeEvent({
    kind: accepted.kind,
    groupId: accepted.groupId,
    payload: accepted.payload,
    source: 'ingress',
    actorIds: [accepted.actorId],
    priority: priorityOf(accepted),
    createdAt: now,
  });
}
