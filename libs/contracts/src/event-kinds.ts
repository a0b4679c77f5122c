/**
 * Every fact the runtime records. A kind names what happened, in the past tense of the product's nouns.
 * Adding a kind: add it here, give it a payload class in `payloads.ts` and register both in `PAYLOAD_CLASSES`.
 */
export const EventKind = {
  /** A group or private message seen by the bot that is not addressed to it. */
  MessageObserved: 'message.observed',
  /** A message addressed to the bot (@, quote of the bot, its name, or a private message). */
  MessageDirect: 'message.direct',
  /** The scheduler decided what to do about an event (deliberate, skip, …), with its reason. */
  DecisionMade: 'decision.made',
  /** An event moved through the event state machine outside a decision (e.g. deliberating → replied). */
  EventTransitioned: 'event.transitioned',
  EpisodeStarted: 'episode.started',
  EpisodeStep: 'episode.step',
  EpisodeCompleted: 'episode.completed',
  /** Cognition asks outbound to say something in a group. */
  ActionSend: 'action.send',
  /** One segment of an action was delivered by the OneBot implementation. */
  MessageSent: 'message.sent',
  /** One segment of an action could not be delivered and will not be retried. */
  SendFailed: 'send.failed',
  /** Delivery of one segment is unknown (timeout after the request left, crash mid-send); never retried. */
  SendUnknown: 'send.unknown',
  /** Someone withdrew a message; a pending decision, a running episode and a queued send about it are dropped. */
  MessageRecalled: 'message.recalled',
  /** A durable timer came due (runtime spine). */
  TimerFired: 'timer.fired',
  /** The scheduler set or moved a durable timer. */
  TimerScheduled: 'timer.scheduled',
  /** The scheduler cancelled a durable timer before it fired. */
  TimerCancelled: 'timer.cancelled',
  /** The scheduler told an episode to start, stop, take new messages in or continue. */
  EpisodeControl: 'episode.control',
  /** An episode parked itself until a timer (`wait`) or an asynchronous tool's result. */
  EpisodeWaiting: 'episode.waiting',
  /** An asynchronous tool call finished. */
  ToolResult: 'tool.result',
  /** One LLM call and its tokens (cognition; others may record their `utils` calls the same way). */
  LlmCalled: 'llm.called',
  /** The persona policy version a process runs with. */
  PersonaPublished: 'persona.published',
  /** A monitor event of an episode (session.start, cycle.start, planner.finalized, llm.retry, …) for the panel. */
  MonitorRecorded: 'monitor.recorded',
  /** The implementation reported one of the bot's own messages (`message_sent`): the bot's, never new input. */
  MessageEchoed: 'message.echoed',
  /** A OneBot notice (member joined or left, ban, admin, card, essence, emoji reaction, a poke not at the bot …). */
  NoticeReceived: 'notice.received',
  /** A friend or group request (recorded; nothing answers it yet). */
  RequestReceived: 'request.received',
  /** Outbound let go of a reply before it went out (its trigger was recalled). */
  SendDropped: 'send.dropped',
  /** An unknown send outcome was checked against the implementation's recent history. */
  SendVerified: 'send.verified',
  PersonalActivityStarted: 'personal.activity.started',
  PersonalActivityBeat: 'personal.activity.beat',
  PersonalActivityCompleted: 'personal.activity.completed',
  /** The life director loaded the life script: goals, milestones, mood, disclosure per group. */
  PersonalAgendaLoaded: 'personal.agenda.loaded',
  /** A validated utils-model detail was added to an activity. */
  PersonalActivityDetailed: 'personal.activity.detailed',
  /** Enough activities served a long-term goal to reach one of its milestones. */
  PersonalMilestoneReached: 'personal.milestone.reached',
  /** A thread's running summary was written (memory). */
  MemorySummaryWritten: 'memory.summary.written',
  /** A fact about a person was learned, reinforced or replaced a conflicting one (memory). */
  MemoryFactLearned: 'memory.fact.learned',
  /** A group word was judged after enough sightings: jargon with a meaning, or ordinary (memory). */
  MemoryJargonLearned: 'memory.jargon.learned',
  /** A thread changed: a message joined it, the bot replied in it, a question in it was answered (attention). */
  ThreadUpdated: 'thread.updated',
  /** A thread was quiet for its idle gap and left the group's live threads (attention). */
  ThreadIdle: 'thread.idle',
  /** The group actor's reply budget, cooldown and live threads after a reply or an episode (attention). */
  GroupActorUpdated: 'group.actor.updated',
  /** A keyword lexicon term was added, promoted, reweighted, decayed, expired, pinned, suppressed or deleted. */
  KeywordTermChanged: 'keyword.term.changed',
  /** A keyword set (one scope and owner) published a new version: matchers rebuild, snoozed events re-evaluate. */
  KeywordLexiconVersioned: 'keyword.lexicon.versioned',
  /** A person (the panel, `npm run keywords`) asked to pin, suppress, delete or add a keyword term. */
  KeywordControlRequested: 'keyword.control.requested',
} as const;

export type EventKind = (typeof EventKind)[keyof typeof EventKind];

export const ALL_EVENT_KINDS: readonly EventKind[] = Object.values(EventKind);

export function isEventKind(value: unknown): value is EventKind {
  return typeof value === 'string' && (ALL_EVENT_KINDS as readonly string[]).includes(value);
}
