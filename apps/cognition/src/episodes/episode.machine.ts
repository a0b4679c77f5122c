import {
  EndActionArgs,
  QunliError,
  ReplyActionArgs,
  validateToolArgs,
  WaitActionArgs,
  type EpisodeControlPayload,
  type EpisodeEndCause,
  type EpisodeOutcome,
  type SenderRole,
} from '@app/contracts';
import type { ToolCall } from '@app/llm';
import type { ChatLine, EpisodeState, EpisodeStatus, HistoryEntry } from './episode-state.js';

/*
 * The episode state machine as pure decisions (a decider the runner drives): which moves are allowed, when a
 * limit ends the episode, what a control command means, what the planner's answer asks for. No I/O.
 */

const ALLOWED: Readonly<Record<EpisodeStatus, readonly EpisodeStatus[]>> = {
  pending: ['thinking', 'final'],
  thinking: ['thinking', 'acting', 'awaiting_observation', 'final'],
  acting: ['thinking', 'awaiting_observation', 'final'],
  awaiting_observation: ['thinking', 'final'],
  final: [],
};

export function canMove(from: EpisodeStatus, to: EpisodeStatus): boolean {
  return ALLOWED[from].includes(to);
}

/** A checked transition; throws `EPISODE.BAD_TRANSITION` for a move the table does not allow. */
export function moveTo(state: EpisodeState, to: EpisodeStatus): EpisodeState {
  if (!canMove(state.status, to)) {
    throw new QunliError('EPISODE.BAD_TRANSITION', `episode ${state.episodeId} cannot go ${state.status} → ${to}`, {
      from: state.status,
      to,
    });
  }
  return { ...state, status: to };
}

export interface EpisodeEnd {
  outcome: EpisodeOutcome;
  cause: EpisodeEndCause;
  reason: string;
  errorCode?: string;
}

/** Outcome of an episode that ends without a (further) action: it replied earlier, or it did not. */
export function quietOutcome(state: EpisodeState): EpisodeOutcome {
  return state.replies > 0 ? 'replied' : 'no_reply';
}

/** The limit that ends the episode before its next step, if any (ADR §8: steps, deadline, budget). */
export function limitReached(state: EpisodeState, nowMs: number): EpisodeEnd | null {
  if (nowMs >= Date.parse(state.deadline)) {
    return {
      outcome: state.replies > 0 ? 'replied' : 'failed',
      cause: 'deadline',
      reason: `deadline ${state.deadline} passed after ${state.step} steps`,
      errorCode: 'EPISODE.DEADLINE_EXCEEDED',
    };
  }
  const spent = state.tokensIn + state.tokensOut;
  if (spent >= state.tokenBudget) {
    return {
      outcome: state.replies > 0 ? 'replied' : 'failed',
      cause: 'token_budget',
      reason: `spent ${spent} of ${state.tokenBudget} tokens`,
      errorCode: 'EPISODE.TOKEN_BUDGET_EXCEEDED',
    };
  }
  if (state.step >= state.maxSteps) {
    return {
      outcome: quietOutcome(state),
      cause: 'max_steps',
      reason: `took all ${state.maxSteps} steps`,
      ...(state.replies > 0 ? {} : { errorCode: 'EPISODE.MAX_STEPS' }),
    };
  }
  return null;
}

/** Malformed planner answers tolerated in a row (each becomes a corrective observation). */
export const MAX_CORRECTIONS = 2;

export type ControlEffect =
  | { kind: 'ignore' }
  | { kind: 'advance' }
  | { kind: 'stop'; end: EpisodeEnd }
  | { kind: 'interrupt'; eventIds: string[] };

/** What one control command means for the episode; commands at or below the applied seq are ignored. */
export function controlEffect(state: EpisodeState, command: EpisodeControlPayload): ControlEffect {
  if (command.seq <= state.appliedSeq) return { kind: 'ignore' };
  switch (command.command) {
    case 'cancel':
      return { kind: 'stop', end: { outcome: 'cancelled', cause: 'cancelled', reason: command.reason } };
    case 'supersede':
      return {
        kind: 'stop',
        end: {
          outcome: 'superseded',
          cause: 'superseded',
          reason: command.supersededBy ? `${command.reason} (by ${command.supersededBy})` : command.reason,
        },
      };
    case 'interrupt':
      return { kind: 'interrupt', eventIds: command.eventIds ?? [] };
    case 'start':
    case 'resume':
      return { kind: 'advance' };
  }
}

/** Whether the planner may still be aborted for new messages (Maisaka: a cap on consecutive interrupts). */
export function interruptible(state: EpisodeState, maxInterrupts: number): boolean {
  return state.interruptsInARow < maxInterrupts;
}

/**
 * Add chat lines the history does not have yet (by event or message id), in the order given (the log's order:
 * implementations' clocks disagree, so `sentAt` is not trusted for ordering); returns the new ones.
 */
export function mergeMessages(state: EpisodeState, lines: ChatLine[]): { state: EpisodeState; added: ChatLine[] } {
  const known = new Set(state.history.flatMap((e) => (e.kind === 'message' ? [e.eventId, e.messageId] : [])));
  const added: ChatLine[] = [];
  for (const line of lines) {
    if (known.has(line.eventId) || known.has(line.messageId)) continue;
    known.add(line.eventId);
    known.add(line.messageId);
    added.push(line);
  }
  if (added.length === 0) return { state, added };
  const addressees = [...state.addressees];
  for (const line of added) {
    if (!line.fromSelf)
      addressees.push({ messageId: line.messageId, userId: line.userId, role: line.role ?? 'member' });
  }
  return { state: { ...state, history: [...state.history, ...added], addressees }, added };
}

const ROLE_RANK: Readonly<Record<SenderRole | 'bot_owner', number>> = {
  unknown: 0,
  member: 0,
  admin: 1,
  owner: 1,
  bot_owner: 2,
};

/**
 * The role that gates the episode's tool calls: the lowest among everyone whose message it answers, so a
 * member's message merged into an owner's episode cannot borrow the owner's rights. Configured bot owners rank
 * `owner`; a group's owner (群主) ranks as admin, since `owner` tools act on the bot itself.
 */
export function effectiveRole(state: EpisodeState, owners: ReadonlySet<string>): 'member' | 'admin' | 'owner' {
  let rank = Number.POSITIVE_INFINITY;
  for (const a of state.addressees) {
    rank = Math.min(rank, owners.has(a.userId) ? ROLE_RANK.bot_owner : ROLE_RANK[a.role]);
  }
  if (!Number.isFinite(rank)) rank = 0;
  return rank >= 2 ? 'owner' : rank === 1 ? 'admin' : 'member';
}

/** The builtin actions the runner itself carries out; every other tool name goes to the registry. */
export const ACTION_TOOLS = ['reply', 'wait', 'no_action', 'observe', 'finish', 'send_emoji'] as const;
export type ActionToolName = (typeof ACTION_TOOLS)[number];

export type PlannerDecision =
  | { kind: 'reply'; call: ToolCall; args: ReplyActionArgs; target: ChatLine }
  | { kind: 'wait'; call: ToolCall; args: WaitActionArgs }
  | { kind: 'end'; call: ToolCall; action: 'no_action' | 'observe' | 'finish'; reason: string }
  | { kind: 'send_emoji'; call: ToolCall; args: Record<string, unknown> }
  | { kind: 'tool'; call: ToolCall; args: Record<string, unknown> }
  | { kind: 'invalid'; call: ToolCall | null; reason: InvalidReason; message: string; hint: string };

export type InvalidReason = 'no_tool_call' | 'unknown_tool' | 'bad_json' | 'invalid_arguments' | 'unknown_message';

/** The call's arguments as a JSON object, or why they are not one. An empty string counts as `{}`. */
export function parseArguments(
  call: ToolCall,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  const raw = call.arguments.trim() === '' ? '{}' : call.arguments;
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { ok: false, error: 'arguments must be a JSON object' };
    }
    return { ok: true, value: value as Record<string, unknown> };
  } catch (error) {
    return { ok: false, error: `arguments are not valid JSON: ${(error as Error).message}` };
  }
}

function invalid(call: ToolCall | null, reason: InvalidReason, message: string, hint: string): PlannerDecision {
  return { kind: 'invalid', call, reason, message, hint };
}

/**
 * Turn the planner's answer into a decision, or name exactly what is wrong with it (a corrective observation).
 * The first tool call counts. `offered` is the tool names the planner was shown.
 */
export function decidePlannerAnswer(
  answer: { content: string | null; toolCalls: ToolCall[] },
  offered: ReadonlySet<string>,
  history: readonly HistoryEntry[],
): PlannerDecision {
  const call = answer.toolCalls[0];
  if (!call) return invalid(null, 'no_tool_call', 'the planner called no tool', '你没有调用任何工具');
  if (!offered.has(call.name)) {
    return invalid(
      call,
      'unknown_tool',
      `unknown or unavailable tool ${JSON.stringify(call.name)}`,
      `现在没有叫「${call.name}」的工具可用；只能调用列出的工具（找别的工具先用 tool_search）`,
    );
  }
  const parsed = parseArguments(call);
  if (!parsed.ok) {
    return invalid(call, 'bad_json', `${call.name}: ${parsed.error}`, `${call.name} 的参数不是合法的 JSON 对象`);
  }
  const bad = (errors: string[]) =>
    invalid(
      call,
      'invalid_arguments',
      `invalid ${call.name} arguments: ${errors.join('; ')}`,
      `${call.name} 的参数不对（${errors.map((e) => e.split(':')[0]).join('、')}）`,
    );
  switch (call.name) {
    case 'reply': {
      const args = validateToolArgs(ReplyActionArgs, parsed.value);
      if (!args.ok) return bad(args.errors);
      const target = history.find(
        (e): e is ChatLine => e.kind === 'message' && e.messageId === args.value.msg_id && !e.fromSelf,
      );
      if (!target) {
        return invalid(
          call,
          'unknown_message',
          `reply: no message ${args.value.msg_id} from someone else in the context`,
          `msg_id「${args.value.msg_id}」不是上下文里别人发的消息；请用消息前缀 [msg_id] 里的编号`,
        );
      }
      return { kind: 'reply', call, args: args.value, target };
    }
    case 'wait': {
      const args = validateToolArgs(WaitActionArgs, parsed.value);
      return args.ok ? { kind: 'wait', call, args: args.value } : bad(args.errors);
    }
    case 'no_action':
    case 'observe':
    case 'finish': {
      const args = validateToolArgs(EndActionArgs, parsed.value);
      if (!args.ok) return bad(args.errors);
      return { kind: 'end', call, action: call.name, reason: args.value.reason ?? call.name };
    }
    case 'send_emoji':
      return { kind: 'send_emoji', call, args: parsed.value };
    default:
      return { kind: 'tool', call, args: parsed.value };
  }
}

/** A step's planning answer after a limit: whether the wait fits before the deadline. */
export function waitFits(state: EpisodeState, nowMs: number, seconds: number): { ok: boolean; maxSeconds: number } {
  const maxSeconds = Math.floor((Date.parse(state.deadline) - nowMs) / 1000) - 1;
  return { ok: seconds <= maxSeconds, maxSeconds: Math.max(0, maxSeconds) };
}

/** The messages of `target`'s sender the episode answers, before and after `target` in its history. */
function sameSenderAround(state: EpisodeState, target: ChatLine): { before: ChatLine[]; after: ChatLine[] } {
  const lines = state.history.filter((e): e is ChatLine => e.kind === 'message');
  const at = lines.findIndex((l) => l.messageId === target.messageId);
  if (at < 0) return { before: [], after: [] };
  const addressed = new Set(state.addressees.map((a) => a.messageId));
  const ours = (l: ChatLine) => !l.fromSelf && l.userId === target.userId && addressed.has(l.messageId);
  return { before: lines.slice(0, at).filter(ours), after: lines.slice(at + 1).filter(ours) };
}

/**
 * What the answered person said before `target` in this episode and no reply of it has answered yet (the trigger
 * and its fragments, when the reply turns to a later message of the same person): one person's turn gets one
 * answer, so these are answered with it, not left as background to be answered again.
 */
export function earlierOf(state: EpisodeState, target: ChatLine): ChatLine[] {
  const answered = new Set(state.answered ?? []);
  return sameSenderAround(state, target).before.filter((l) => !answered.has(l.eventId));
}

/**
 * What the answered person said after `target` while the episode ran (messages taken in by an interrupt): part of
 * what the reply answers, not background, so a question added while the bot was thinking is not ignored.
 */
export function followUpsOf(state: EpisodeState, target: ChatLine): ChatLine[] {
  return sameSenderAround(state, target).after;
}
