/**
 * Names of every Redis key, stream and consumer group. One place, so a reader can see the whole keyspace and
 * so that every key of one partition carries the same Redis Cluster hash tag (`{p7}`) and lands in one slot:
 * a handler's effects (new events, inbox, ack, group state) commit in one MULTI.
 */

import { EventKind } from './event-kinds.js';

export const DEFAULT_PARTITIONS = 16;

/** The partition key of events that belong to no group (the bot's own life line). */
export const GLOBAL_PARTITION_KEY = '__global__';

/** 32-bit FNV-1a over UTF-16 code units: stable across processes and versions, cheap, well spread. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export function partitionOf(groupId: string | null, partitions: number): number {
  return fnv1a32(groupId ?? GLOBAL_PARTITION_KEY) % partitions;
}

/** The member of `Keyspace.sentMessages` for one of the bot's messages in a conversation (group id or `private:<id>`). */
export function sentMessageMember(conversation: string, onebotMessageId: string): string {
  return `${conversation}:${onebotMessageId}`;
}

/** Consumer groups on the event streams. Each reads every partition; a partition has one owner per group. */
export const ConsumerGroup = {
  Scheduler: 'scheduler',
  Projector: 'projector',
  Outbound: 'outbound',
  /** Memory workers (run by life-director): thread buffers, summary and idle jobs. */
  Memory: 'memory',
  /** The keyword lexicon (run by the scheduler): candidate words, summaries, jargon, feedback, commands. */
  Keywords: 'keywords',
} as const;
export type ConsumerGroup = (typeof ConsumerGroup)[keyof typeof ConsumerGroup];

/**
 * Consumer groups that want only a few rare kinds of the log and rest between reads while the log holds nothing
 * for them (`ConsumerOptions.idleLingerMs`): every writer of one of these kinds publishes the partition on the
 * group's wake channel (`Keyspace.streamWakeChannel`) once the entry is appended, so the group reads it at once.
 */
export const WAKES: Readonly<Partial<Record<string, readonly ConsumerGroup[]>>> = {
  [EventKind.ActionSend]: [ConsumerGroup.Outbound],
  [EventKind.MessageRecalled]: [ConsumerGroup.Outbound],
};

/**
 * Every kind each per-event consumer group handles (ADR 0044). A writer that appends only kinds a group does not
 * handle moves that group's read position past its entries, when the group had read everything before them, so the
 * group's readers are neither woken nor made to acknowledge them. A reader refuses to start for a handler of a kind
 * not listed here: a kind missing from this list would be passed over, and its events would never reach the group.
 * Batch groups (the projector, keyword learning) read the whole log and are never passed over.
 */
export const HANDLED_KINDS: Readonly<Partial<Record<ConsumerGroup, readonly EventKind[]>>> = {
  [ConsumerGroup.Scheduler]: [
    EventKind.MessageDirect,
    EventKind.MessageObserved,
    EventKind.MessageRecalled,
    EventKind.TimerFired,
    EventKind.EpisodeControl,
    EventKind.ActionSend,
    EventKind.EpisodeCompleted,
    EventKind.EpisodeWaiting,
    EventKind.ToolResult,
    EventKind.MessageSent,
    EventKind.SendFailed,
    EventKind.SendUnknown,
    EventKind.SendDropped,
    EventKind.KeywordLexiconVersioned,
  ],
  [ConsumerGroup.Outbound]: [EventKind.ActionSend, EventKind.MessageRecalled],
  [ConsumerGroup.Memory]: [EventKind.MessageDirect, EventKind.MessageObserved, EventKind.MessageSent],
};

/** The per-event groups that handle none of `kinds`: a writer appending only these kinds may pass them over. */
export function groupsPassedOver(kinds: Iterable<string>): ConsumerGroup[] {
  const appended = [...kinds];
  const passed: ConsumerGroup[] = [];
  for (const [group, handled] of Object.entries(HANDLED_KINDS) as [ConsumerGroup, readonly string[]][]) {
    if (!appended.some((kind) => handled.includes(kind))) passed.push(group);
  }
  return passed;
}

/** Key builders for one deployment (`prefix` isolates deployments and test runs). */
export class Keyspace {
  constructor(
    readonly prefix: string,
    readonly partitions: number,
  ) {
    if (!Number.isInteger(partitions) || partitions < 1) {
      throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
    }
  }

  private tag(partition: number): string {
    return `{p${partition}}`;
  }

  partitionOf(groupId: string | null): number {
    return partitionOf(groupId, this.partitions);
  }

  /** The hot event log of one partition. */
  stream(partition: number): string {
    return `${this.prefix}:events:${this.tag(partition)}`;
  }

  /** Entries a consumer group gave up on after too many deliveries. */
  deadLetters(partition: number): string {
    return `${this.prefix}:dead:${this.tag(partition)}`;
  }

  /** Processed event ids of one consumer group in one partition (sorted set scored by processing time). */
  inbox(partition: number, group: string): string {
    return `${this.prefix}:inbox:${this.tag(partition)}:${group}`;
  }

  /** Ingress duplicate guard for one upstream message. */
  dedup(partition: number, key: string): string {
    return `${this.prefix}:dedup:${this.tag(partition)}:${key}`;
  }

  /**
   * Per-group runtime state owned by the scheduler, as written before ADR-0025 (one JSON string); read once when a
   * group's state is first loaded after an upgrade, then replaced by `groupStateFields`.
   */
  groupState(partition: number, groupId: string): string {
    return `${this.prefix}:group:${this.tag(partition)}:${groupId}`;
  }

  /** Per-group runtime state owned by the scheduler: a hash with one JSON field per live entry (ADR-0025). */
  groupStateFields(partition: number, groupId: string): string {
    return `${this.prefix}:gstate:${this.tag(partition)}:${groupId}`;
  }

  /** Recent messages of a group, newest first, capped. */
  groupRecent(partition: number, groupId: string): string {
    return `${this.prefix}:recent:${this.tag(partition)}:${groupId}`;
  }

  /** Current state of events the scheduler is tracking in one partition (hash: event id → JSON). */
  eventStates(partition: number): string {
    return `${this.prefix}:evstate:${this.tag(partition)}`;
  }

  /** Outbound's send ledger of one partition (hash: `actionId:segment` → JSON). */
  sendLedger(partition: number): string {
    return `${this.prefix}:sends:${this.tag(partition)}`;
  }

  /** Marker set when an episode has published its outcome, so a re-delivered job does nothing. */
  episodeDone(partition: number, episodeId: string): string {
    return `${this.prefix}:episode-done:${this.tag(partition)}:${episodeId}`;
  }

  /**
   * Marker set in the commit of each of an episode's sends (string: JSON list of the event ids its replies
   * covered), so the scheduler knows before it decides — not only when the `action.send` reaches it — that the
   * episode answered and must not be superseded, and a successor knows which inherited messages are answered.
   */
  episodeActed(partition: number, episodeId: string): string {
    return `${this.prefix}:episode-acted:${this.tag(partition)}:${episodeId}`;
  }

  /** Cognition's persisted state of one episode (hash: `rev`, `state` JSON), so any worker can continue it. */
  episodeState(partition: number, episodeId: string): string {
    return `${this.prefix}:episode-state:${this.tag(partition)}:${episodeId}`;
  }

  /** Pending confirmations of dangerous tool calls in one conversation (hash: sender:tool:args → JSON). */
  toolConfirmations(partition: number, groupId: string): string {
    return `${this.prefix}:tool-confirm:${this.tag(partition)}:${groupId}`;
  }

  /** Durable timers of one partition (sorted set: due time in product ms → timer JSON). Owned by the scheduler,
   * set in the commit of the state that needs them, fired as `timer.fired` into the same partition. */
  timers(partition: number): string {
    return `${this.prefix}:timers:${this.tag(partition)}`;
  }

  /** What each durable timer of one partition is (hash: timer id → timer JSON); its due time is in `timers`. */
  timerData(partition: number): string {
    return `${this.prefix}:timer-data:${this.tag(partition)}`;
  }

  /** Messages the scheduler holds until it decides about them (hash: event id → envelope JSON). */
  heldMessages(partition: number): string {
    return `${this.prefix}:held:${this.tag(partition)}`;
  }

  /** The start job of an unfinished episode, kept to build its continuations (string: `EpisodeJob` JSON). */
  episodeJob(partition: number, episodeId: string): string {
    return `${this.prefix}:episode-job:${this.tag(partition)}:${episodeId}`;
  }

  /**
   * The fair dispatcher's keys. They are global (caps hold across scheduler processes), so they share one hash tag
   * of their own: `name` is `waiting`, `running`, `ring:direct`, `q:ambient:<group>`…
   */
  dispatch(name: string): string {
    return `${this.prefix}:dispatch:{dispatch}:${name}`;
  }

  /** Pub/sub channel waking a consumer group's resting readers: the message is the partition an entry for it is in. */
  streamWakeChannel(group: string): string {
    return `${this.prefix}:stream-wake:${group}`;
  }

  /** Pub/sub channel telling every scheduler process that dispatch work may be possible (offer, freed slot). */
  get dispatchWakeChannel(): string {
    return `${this.prefix}:dispatch-wake`;
  }

  /** The control record of one episode (`EpisodeControlRecord` JSON), written in the scheduler's commit. */
  episodeControl(partition: number, episodeId: string): string {
    return `${this.prefix}:episode-control:${this.tag(partition)}:${episodeId}`;
  }

  /** Pub/sub channel on which every `episode.control` command is also published, for running workers to hear. */
  get episodeControlChannel(): string {
    return `${this.prefix}:episode-control`;
  }

  /** The life director's current activity; lives in the partition of its `personal.*` events. */
  lifeState(partition: number): string {
    return `${this.prefix}:life:${this.tag(partition)}:current`;
  }

  /** Memory: the group's current fallback thread when events carry no `threadId` (hash: id, lastAt). */
  memoryGroupThread(partition: number, groupId: string): string {
    return `${this.prefix}:mem-thread:${this.tag(partition)}:${groupId}`;
  }

  /** Memory: one thread's counters (hash: ordinal, summarized, lastAt). */
  memoryThreadState(partition: number, groupId: string, threadId: string): string {
    return `${this.prefix}:mem-state:${this.tag(partition)}:${groupId}:${threadId}`;
  }

  /** Memory: one thread's messages not yet summarised (sorted set scored by ordinal; members are line JSON). */
  memoryThreadLines(partition: number, groupId: string, threadId: string): string {
    return `${this.prefix}:mem-lines:${this.tag(partition)}:${groupId}:${threadId}`;
  }

  /** Memory: utils-model calls and tokens spent for one group in one budget window (hash: calls, tokens). */
  memoryBudget(partition: number, groupId: string, window: number): string {
    return `${this.prefix}:mem-budget:${this.tag(partition)}:${groupId}:${window}`;
  }

  /**
   * Message ids the bot sent in one partition (sorted set: `<conversation>:<onebotMessageId>` scored by product
   * ms). Outbound adds each part in the commit that appends its `message.sent`; ingress adds what the
   * implementation reports as `message_sent`; ingress reads it to tell a quote of the bot (`direct: reply`).
   */
  sentMessages(partition: number): string {
    return `${this.prefix}:sent-ids:${this.tag(partition)}`;
  }

  /** Outbound's queue of replies for one conversation (sorted set, lexicographic: `<entry id>|<action id>`). */
  outbox(partition: number, conversation: string): string {
    return `${this.prefix}:outbox:${this.tag(partition)}:${conversation}`;
  }

  /** The queued replies of one partition (hash: action id → outbox item JSON). */
  outboxItems(partition: number): string {
    return `${this.prefix}:outbox-items:${this.tag(partition)}`;
  }

  /** Conversations of one partition with queued replies (set), so a restarted outbound finds them. */
  outboxConversations(partition: number): string {
    return `${this.prefix}:outbox-convs:${this.tag(partition)}`;
  }

  /** The one outbound process sending for a conversation right now (value: instance id, with an expiry). */
  outboxLock(partition: number, conversation: string): string {
    return `${this.prefix}:outbox-lock:${this.tag(partition)}:${conversation}`;
  }

  /** A conversation's send budget (hash: tokens, at) and cooldown (its own key with an expiry). */
  sendBudget(partition: number, conversation: string): string {
    return `${this.prefix}:send-budget:${this.tag(partition)}:${conversation}`;
  }

  sendCooldown(partition: number, conversation: string): string {
    return `${this.prefix}:send-cooldown:${this.tag(partition)}:${conversation}`;
  }

  /** Trigger events whose message was recalled (sorted set scored by product ms), as outbound learned them. */
  recalledTriggers(partition: number): string {
    return `${this.prefix}:recalled:${this.tag(partition)}`;
  }

  /** The deployment-wide send rate (one token bucket for every outbound process). */
  get sendRate(): string {
    return `${this.prefix}:send-rate`;
  }

  /** OneBot inputs ingress refused, with the raw payload, for people to inspect (capped stream). */
  get ingressDeadLetters(): string {
    return `${this.prefix}:ingress:dead`;
  }

  /**
   * Action requests for the reverse-WebSocket connection of one bot account (`any` for whichever is connected).
   * Outbound pushes, the ingress holding the connection pops and answers on `relayReplies`. One hash tag for all
   * relay keys so a pop can wait on an account's list and the `any` list at once.
   */
  relayRequests(selfId: string): string {
    return `${this.prefix}:relay:{relay}:requests:${selfId}`;
  }

  /** Pub/sub channel on which ingress publishes every relayed answer (matched by echo). */
  get relayReplies(): string {
    return `${this.prefix}:relay:{relay}:replies`;
  }

  /** Set (with an expiry) while an ingress holds an API-capable connection of the bot account. */
  relayPresence(selfId: string): string {
    return `${this.prefix}:relay:{relay}:presence:${selfId}`;
  }

  /** Lease on one partition for one consumer group. */
  lease(group: string, partition: number): string {
    return `${this.prefix}:lease:${group}:${partition}`;
  }

  /** Live members of a consumer group (sorted set scored by heartbeat expiry). */
  members(group: string): string {
    return `${this.prefix}:members:${group}`;
  }

  /** BullMQ key prefix. One hash tag for all queues: BullMQ needs a queue's keys in one slot. */
  get bullPrefix(): string {
    return `${this.prefix}:{bull}`;
  }

  /*
   * The keyword lexicon's live state (ADR-0020). One hash tag for all of it: a change to a group's set, the global
   * set's feedback, the version announcement and the consumer's done marker commit in one MULTI. Writes are rare
   * (promotions, feedback, commands), reads are one load per version change, so one slot is plenty.
   */

  /** One keyword set's terms (hash: term id → term JSON); `setKey` is `<scope>:<owner id>`. */
  keywordTerms(setKey: string): string {
    return `${this.prefix}:kw:{kw}:terms:${setKey}`;
  }

  /** Every keyword set's meta (hash: set key → `{ version, maintainedAt, updatedAt }` JSON). */
  get keywordSets(): string {
    return `${this.prefix}:kw:{kw}:sets`;
  }

  /** Which set holds a term (hash: term id → set key), for feedback that only knows the term id. */
  get keywordTermIndex(): string {
    return `${this.prefix}:kw:{kw}:term-index`;
  }

  /** Every new set version (stream: `set`, `version`), followed by every scheduler's keyword lookup. */
  get keywordVersions(): string {
    return `${this.prefix}:kw:{kw}:versions`;
  }

  /** The keyword consumer has committed what `id` (an event, a seeding) changed. */
  keywordDone(id: string): string {
    return `${this.prefix}:kw:{kw}:done:${id}`;
  }

  /** A group's candidate words before promotion (hash: word → JSON, `#total` → messages counted). */
  keywordPool(groupId: string): string {
    return `${this.prefix}:kw:{kw}:pool:${groupId}`;
  }

  /** A group's keyword feedback in progress: recent senders, hits awaiting their episode or follow-up (JSON). */
  keywordFeedback(groupId: string): string {
    return `${this.prefix}:kw:{kw}:feedback:${groupId}`;
  }
}
