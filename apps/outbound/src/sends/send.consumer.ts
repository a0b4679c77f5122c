import { Controller, Inject, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import {
  EventKind,
  makeEvent,
  QunliError,
  type ActionSendPayload,
  type EventOf,
  type MessageSentPayload,
  type SendProblemPayload,
} from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { OneBotHttpApi, Segment, type OneBotSegment } from '@app/onebot';
import { Metrics, QunliConfig, SHORT_SECONDS_BUCKETS } from '@app/platform';
import { planSegments, type PlannedSegment } from '../split/reply.splitter.js';
import { SendBackoff } from './send-backoff.js';
import type { LedgerEntry, LedgerError } from './send-ledger.js';
import { SendLedger, type StoredEntry } from './send-ledger.repository.js';
import { INTERRUPTED, stepFor, verdictFor } from './send.policy.js';

type ActionEvent = EventOf<'action.send'>;

/** Whether the action may go on to its next segment. */
type SegmentResult = 'delivered' | 'stopped';

/**
 * Turns `action.send` into OneBot API calls, one segment after the other, with the send ledger keeping every
 * segment to at most one delivery across crashes and redeliveries (see `send.policy.ts`).
 *
 * Every segment that is attempted ends in exactly one event: `message.sent`, `send.failed` or `send.unknown`.
 * The first segment that does not end `sent` stops the action: later segments are neither sent nor recorded (a
 * reply missing its first half reads worse than no reply, and after a timeout the implementation is likely under
 * risk control). The stopping event carries `segmentIndex` and `segmentCount`, so the log shows what was left.
 * A redelivered action publishes the same outcomes again from the ledger; the projection is keyed by
 * (action, segment), so that is idempotent and the log stays complete.
 */
@Controller()
export class SendConsumer {
  private readonly log = new Logger('SendConsumer');
  private readonly sends;
  private readonly retries;
  private readonly rejected;
  private readonly latency;

  constructor(
    private readonly ledger: SendLedger,
    @Inject(OneBotHttpApi) private readonly api: OneBotHttpApi,
    private readonly config: QunliConfig,
    private readonly backoff: SendBackoff,
    metrics: Metrics,
  ) {
    this.sends = metrics.counter({
      name: 'qunli_sends_total',
      help: 'Message segments by outcome: sent, failed, unknown, skipped_duplicate (already settled in the ledger)',
      labelNames: ['outcome'],
    });
    this.retries = metrics.counter({
      name: 'qunli_send_retries_total',
      help: 'API calls repeated because the OneBot implementation was unreachable',
    });
    this.rejected = metrics.counter({
      name: 'qunli_send_rejected_total',
      help: 'send actions refused before any API call, by reason',
      labelNames: ['reason'],
    });
    this.latency = metrics.histogram({
      name: 'qunli_send_duration_seconds',
      help: 'Time to settle one segment (all attempts and backoff included), by outcome',
      labelNames: ['outcome'],
      buckets: SHORT_SECONDS_BUCKETS,
    });
  }

  // `<string>` picks the untyped overload: the typed one would force the context parameter to accept `unknown`.
  @EventPattern<string>(EventKind.ActionSend)
  async onActionSend(@Payload() event: ActionEvent, @Ctx() ctx: StreamContext): Promise<void> {
    const action = event.payload;
    const plan = planSegments(action.text, {
      maxChars: this.config.QUNLI_SEND_MAX_SEGMENT_CHARS,
      ...(action.quoteMessageId !== undefined && { quoteMessageId: action.quoteMessageId }),
    });
    if (plan.length === 0) {
      // Nothing to say is a cognition bug, not a send: no event (no attempt was made), but loud and counted.
      this.rejected.inc({ reason: 'empty_text' });
      const error = new QunliError('SEND.EMPTY_TEXT', 'action.send has no text to send', {
        actionId: action.actionId,
        eventId: event.id,
      });
      this.log.error(error.toJSON());
      return;
    }
    const stored = await this.ledger.read(ctx.partition, action.actionId, plan.length);
    for (const segment of plan) {
      const result = await this.settle(event, segment, stored[segment.index], ctx);
      if (result === 'stopped') break;
    }
  }

  private async settle(
    event: ActionEvent,
    segment: PlannedSegment,
    stored: StoredEntry | undefined,
    ctx: StreamContext,
  ): Promise<SegmentResult> {
    const step = stepFor(stored?.entry);
    switch (step.kind) {
      case 'already-sent':
        this.sends.inc({ outcome: 'skipped_duplicate' });
        ctx.publish(this.sentEvent(event, segment, step.entry));
        return 'delivered';
      case 'already-settled':
        this.sends.inc({ outcome: 'skipped_duplicate' });
        ctx.publish(this.problemEvent(event, segment, step.entry));
        return 'stopped';
      case 'interrupted': {
        const entry: LedgerEntry = { state: 'unknown', attempts: step.attempts, at: now(), error: INTERRUPTED };
        const written = await this.ledger.compareAndSet(
          ctx.partition,
          event.payload.actionId,
          segment.index,
          stored,
          entry,
        );
        if (!written) throw this.concurrent(event, segment);
        this.sends.inc({ outcome: 'unknown' });
        this.log.warn({
          message: 'send interrupted by a restart; not resending',
          actionId: event.payload.actionId,
          segment: segment.index,
        });
        ctx.publish(this.problemEvent(event, segment, entry));
        return 'stopped';
      }
      case 'send':
        return this.send(event, segment, stored, step.attempt, ctx);
    }
  }

  private async send(
    event: ActionEvent,
    segment: PlannedSegment,
    stored: StoredEntry | undefined,
    firstAttempt: number,
    ctx: StreamContext,
  ): Promise<SegmentResult> {
    const { actionId } = event.payload;
    const started = performance.now();
    const message = toOneBotSegments(segment);
    let current = stored;
    for (let attempt = firstAttempt; ; attempt++) {
      const sending: LedgerEntry = { state: 'sending', attempts: attempt, at: now() };
      const claimed = await this.ledger.compareAndSet(ctx.partition, actionId, segment.index, current, sending);
      if (!claimed) throw this.concurrent(event, segment);

      const outcome =
        event.payload.targetType === 'group'
          ? await this.api.sendGroupMsg(event.payload.targetId, message)
          : await this.api.sendPrivateMsg(event.payload.targetId, message);
      const verdict = verdictFor(outcome, attempt, { maxAttempts: this.config.QUNLI_SEND_MAX_ATTEMPTS });

      switch (verdict.kind) {
        case 'sent': {
          const entry: LedgerEntry = {
            state: 'sent',
            attempts: attempt,
            onebotMessageId: verdict.onebotMessageId,
            at: now(),
          };
          await this.ledger.write(ctx.partition, actionId, segment.index, entry);
          this.finish('sent', started);
          ctx.publish(this.sentEvent(event, segment, entry));
          return 'delivered';
        }
        case 'failed':
        case 'unknown': {
          const entry: LedgerEntry = {
            state: verdict.kind,
            attempts: attempt,
            at: now(),
            error: verdict.error,
            ...(verdict.retcode !== undefined && { retcode: verdict.retcode }),
          };
          await this.ledger.write(ctx.partition, actionId, segment.index, entry);
          this.finish(verdict.kind, started);
          this.log.warn({ message: `send ${verdict.kind}`, actionId, segment: segment.index, error: verdict.error });
          ctx.publish(this.problemEvent(event, segment, entry));
          return 'stopped';
        }
        case 'retry': {
          // Back to pending before waiting: a crash during the backoff must not read as "crashed mid-call".
          const pending: LedgerEntry = { state: 'pending', attempts: attempt, at: now(), error: verdict.error };
          current = await this.ledger.write(ctx.partition, actionId, segment.index, pending);
          this.retries.inc();
          await this.backoff.wait(verdict.delayMs, attempt);
          break;
        }
      }
    }
  }

  private finish(outcome: 'sent' | 'failed' | 'unknown', started: number): void {
    this.sends.inc({ outcome });
    this.latency.observe({ outcome }, (performance.now() - started) / 1000);
  }

  private concurrent(event: ActionEvent, segment: PlannedSegment): QunliError {
    // Another handler owns this segment right now (an entry reclaimed while its first handler still runs).
    // Throwing leaves the entry pending; the next delivery finds the ledger settled.
    return new QunliError('SEND.CONCURRENT', 'send ledger entry changed under this handler', {
      actionId: event.payload.actionId,
      segment: segment.index,
    });
  }

  private base(
    event: ActionEvent,
    segment: PlannedSegment,
    attempts: number,
  ): Omit<MessageSentPayload, 'onebotMessageId'> {
    const action: ActionSendPayload = event.payload;
    return {
      actionId: action.actionId,
      episodeId: action.episodeId,
      triggerEventId: action.triggerEventId,
      targetType: action.targetType,
      targetId: action.targetId,
      segmentIndex: segment.index,
      segmentCount: segment.count,
      text: segment.text,
      attempts: Math.max(1, attempts),
    };
  }

  private sentEvent(event: ActionEvent, segment: PlannedSegment, entry: LedgerEntry): EventOf<'message.sent'> {
    const payload: MessageSentPayload = {
      ...this.base(event, segment, entry.attempts),
      onebotMessageId: entry.onebotMessageId ?? '',
    };
    return makeEvent({ kind: EventKind.MessageSent, payload, ...this.envelope(event) });
  }

  private problemEvent(
    event: ActionEvent,
    segment: PlannedSegment,
    entry: LedgerEntry,
  ): EventOf<'send.failed'> | EventOf<'send.unknown'> {
    const error: LedgerError = entry.error ?? { code: 'SEND.UNEXPLAINED', message: `ledger says ${entry.state}` };
    const payload: SendProblemPayload = {
      ...this.base(event, segment, entry.attempts),
      error,
      ...(entry.retcode !== undefined && { retcode: entry.retcode }),
    };
    return entry.state === 'failed'
      ? makeEvent({ kind: EventKind.SendFailed, payload, ...this.envelope(event) })
      : makeEvent({ kind: EventKind.SendUnknown, payload, ...this.envelope(event) });
  }

  private envelope(event: ActionEvent) {
    return {
      groupId: event.groupId,
      source: 'outbound',
      cause: event,
      priority: event.priority,
      evidenceMessageIds: event.evidenceMessageIds,
      ...(event.threadId !== undefined && { threadId: event.threadId }),
    };
  }
}

function toOneBotSegments(segment: PlannedSegment): OneBotSegment[] {
  return segment.quoteMessageId === undefined
    ? [Segment.text(segment.text)]
    : [Segment.reply(segment.quoteMessageId), Segment.text(segment.text)];
}

function now(): string {
  return new Date().toISOString();
}
