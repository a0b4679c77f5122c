import {
  EventKind,
  makeEvent,
  type ActionSendPayload,
  type EventOf,
  type MessageSentPayload,
  type SendDroppedPayload,
  type SendProblemPayload,
  type SendVerifiedPayload,
  type VerificationMethod,
} from '@app/contracts';
import type { LedgerError, PartEntry, ReplyPlan } from './send-ledger.js';

type ActionEvent = EventOf<'action.send'>;

/**
 * The facts outbound appends, built the same way for every part: in the conversation the reply went to, caused by
 * its `action.send` (correlation and causation follow), with the action's priority and evidence.
 */
export class SendOutcomeEvents {
  constructor(
    private readonly event: ActionEvent,
    private readonly conversation: string,
    private readonly now: () => Date,
  ) {}

  private get action(): ActionSendPayload {
    return this.event.payload;
  }

  private envelope() {
    return {
      groupId: this.conversation,
      source: 'outbound',
      cause: this.event,
      priority: this.event.priority,
      evidenceMessageIds: this.event.evidenceMessageIds,
      createdAt: this.now(),
      ...(this.event.threadId !== undefined && { threadId: this.event.threadId }),
    };
  }

  private base(index: number, count: number, text: string, attempts: number) {
    return {
      actionId: this.action.actionId,
      episodeId: this.action.episodeId,
      triggerEventId: this.action.triggerEventId,
      targetType: this.action.targetType,
      targetId: this.action.targetId,
      segmentIndex: index,
      segmentCount: count,
      text,
      attempts: Math.max(1, attempts),
    };
  }

  /** A reply that goes to another conversation than its trigger's carries its motivation (never sent). */
  private motivation(): { motivation: string } | Record<string, never> {
    const crossGroup = this.event.groupId !== this.conversation;
    return crossGroup && this.action.motivation ? { motivation: this.action.motivation } : {};
  }

  sent(plan: ReplyPlan, index: number, entry: PartEntry, onebotMessageId: string): EventOf<'message.sent'> {
    const text = plan.form === 'forward' ? plan.parts.join('\n') : plan.parts[index]!;
    const count = plan.form === 'forward' ? 1 : plan.parts.length;
    const payload: MessageSentPayload = {
      ...this.base(index, count, text, entry.attempts),
      onebotMessageId,
      form: plan.form,
      ...(entry.verified && { verified: true }),
      ...this.motivation(),
    };
    return makeEvent({ kind: EventKind.MessageSent, payload, ...this.envelope() });
  }

  problem(kind: 'failed' | 'unknown', plan: ReplyPlan, index: number, entry: PartEntry, error: LedgerError) {
    const text = plan.form === 'forward' ? plan.parts.join('\n') : plan.parts[index]!;
    const count = plan.form === 'forward' ? 1 : plan.parts.length;
    const payload: SendProblemPayload = {
      ...this.base(index, count, text, entry.attempts),
      error,
      ...(entry.retcode !== undefined && { retcode: entry.retcode }),
    };
    return kind === 'failed'
      ? makeEvent({ kind: EventKind.SendFailed, payload, ...this.envelope() })
      : makeEvent({ kind: EventKind.SendUnknown, payload, ...this.envelope() });
  }

  verified(
    index: number,
    found: string | undefined,
    method: VerificationMethod,
    cause: LedgerError,
    examined: number,
    retcode?: number,
  ): EventOf<'send.verified'> {
    const payload: SendVerifiedPayload = {
      actionId: this.action.actionId,
      episodeId: this.action.episodeId,
      triggerEventId: this.action.triggerEventId,
      targetType: this.action.targetType,
      targetId: this.action.targetId,
      segmentIndex: index,
      found: found !== undefined,
      method,
      cause,
      examined,
      ...(found !== undefined && { onebotMessageId: found }),
      ...(retcode !== undefined && { retcode }),
    };
    return makeEvent({ kind: EventKind.SendVerified, payload, ...this.envelope() });
  }

  dropped(partsSent: number, partsPlanned: number, text: string): EventOf<'send.dropped'> {
    const payload: SendDroppedPayload = {
      actionId: this.action.actionId,
      episodeId: this.action.episodeId,
      triggerEventId: this.action.triggerEventId,
      targetType: this.action.targetType,
      targetId: this.action.targetId,
      reason: 'trigger_recalled',
      partsSent,
      partsPlanned,
      text,
    };
    return makeEvent({ kind: EventKind.SendDropped, payload, ...this.envelope() });
  }
}
