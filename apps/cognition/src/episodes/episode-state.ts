import type {
  DispatchLane,
  EpisodeEndCause,
  EpisodeOutcome,
  EventEnvelope,
  MessagePayload,
  MessageSegment,
  SenderRole,
} from '@app/contracts';
import type { ToolCall } from '@app/llm';

/** ADR §8: pending → thinking → acting → awaiting_observation → thinking → final. */
export const EPISODE_STATUSES = ['pending', 'thinking', 'acting', 'awaiting_observation', 'final'] as const;
export type EpisodeStatus = (typeof EPISODE_STATUSES)[number];

/** A real chat message in the episode's history: the only kind that counts toward the context window. */
export interface ChatLine {
  kind: 'message';
  eventId: string;
  messageId: string;
  userId: string;
  /** What people see: group card, else nickname. */
  name: string;
  /** The group card, when the message said. */
  card?: string;
  nickname?: string;
  role?: SenderRole;
  text: string;
  /** Epoch seconds (OneBot `time`). */
  sentAt: number;
  fromSelf: boolean;
  /** Kept for messages the episode answers (forward ids for view_complex_message). */
  segments?: MessageSegment[];
}

/**
 * What the planner has seen and done, in order (Maisaka's context messages). Thoughts count toward the window;
 * tool calls, tool results, references and perceptions do not.
 */
export type HistoryEntry =
  | ChatLine
  | { kind: 'thought'; text: string }
  | { kind: 'tool_call'; content: string; calls: ToolCall[] }
  | { kind: 'tool_result'; callId: string; tool: string; text: string }
  | { kind: 'reference'; text: string }
  | { kind: 'perception'; text: string };

export interface EpisodeWaiting {
  cause: 'wait' | 'tool';
  /** The step that parked the episode. */
  step: number;
  /** wait: product time to resume at. */
  resumeAt?: string;
  seconds?: number;
  /** tool: the call awaiting a `tool.result` (the id given to the tool and the scheduler). */
  toolCallId?: string;
  /** tool: the model's id of that call, which its result answers in the history. */
  callId?: string;
  tool?: string;
  timeoutAt?: string;
}

/** A sender whose message the episode answers; tool permissions take the lowest of them. */
export interface Addressee {
  messageId: string;
  userId: string;
  role: SenderRole;
}

/**
 * An episode between its jobs: everything a worker needs to continue it, persisted (with its steps' events) at
 * every step. Plain JSON.
 */
export interface EpisodeState {
  episodeId: string;
  groupId: string | null;
  status: EpisodeStatus;
  trigger: EventEnvelope<MessagePayload>;
  lane: DispatchLane;
  /** Product times. */
  startedAt: string;
  deadline: string;
  maxSteps: number;
  tokenBudget: number;
  /** The next step's index (= steps taken). */
  step: number;
  tokensIn: number;
  tokensOut: number;
  llmCalls: number;
  /** Highest `episode.control` seq applied. */
  appliedSeq: number;
  interruptsInARow: number;
  invalidInARow: number;
  history: HistoryEntry[];
  /** Index into `history` where the planner's window starts (moved only when the window is cut). */
  windowStart: number;
  /** Deferred tools found by `tool_search`. */
  discovered: string[];
  lastThought: string | null;
  addressees: Addressee[];
  replies: number;
  /**
   * Event ids of the messages its replies covered (target, fragments, follow-ups), and of the fragments it took
   * over that a superseded episode had answered: for the acted marker, and on its sends and its completion for the
   * scheduler, which decides the episode's other events again.
   */
  answered?: string[];
  waiting: EpisodeWaiting | null;
  /** A non-idempotent tool call started and not yet observed (a crash leaves its fate unknown). */
  inFlightTool: { callId: string; tool: string; step: number } | null;
  outcome: EpisodeOutcome | null;
  endedBy: EpisodeEndCause | null;
  personaVersion: string;
  /** The timing gate said continue (or does not apply): it is not asked again, also after interrupts. */
  gatePassed?: boolean;
  /** The planner's fixed prompt prefix, built once so every step reuses it (provider prompt caches). */
  systemPrompt: string;
  situationPrompt: string;
}
