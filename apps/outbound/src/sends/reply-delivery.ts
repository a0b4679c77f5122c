import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, sentMessageMember, type EventEnvelope, type VerificationMethod } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import {
  OneBotActions,
  Segment,
  type ApiOutcome,
  type Conversation,
  type HistoryMessage,
  type OneBotSegment,
} from '@app/onebot';
import { Clock, QunliConfig, REDIS } from '@app/platform';
import { planReply, unfolded } from '../fold/fold.rules.js';
import { ReplyPolisher } from '../polish/reply.polisher.js';
import type { OutboxAddress, OutboxItem } from './outbox.store.js';
import { SendBackoff } from './send-backoff.js';
import type { ActionDone, LedgerError, PartEntry, ReplyPlan, UnsureCause } from './send-ledger.js';
import { SendLedger, type LedgerHead, type Stored } from './send-ledger.repository.js';
import { SendMetrics } from './send.metrics.js';
import { SendOutcomeEvents } from './send-outcome.events.js';
import { SendPacer, type TokensAhead } from './send-pacer.js';
import { backoffMs, stepFor, verdictFor, whenUnverifiable } from './send.policy.js';
import { findDelivered } from './verification.rules.js';

/** Bot message ids remembered per partition for quote detection (the same cap ingress uses). */
const SENT_IDS_PER_PARTITION = 200_000;
/** History messages asked for when verifying. */
const HISTORY_COUNT = 30;

type PartResult =
  { kind: 'next' } | { kind: 'stop'; outcome: ActionDone['outcome'] } | { kind: 'unfold'; plan: Stored<ReplyPlan> };

type Verification =
  | { kind: 'found'; messageId: string; method: VerificationMethod; examined: number }
  | { kind: 'absent'; method: VerificationMethod; examined: number }
  | { kind: 'impossible'; reason: string }
  | { kind: 'unavailable'; reason: string };

interface Delivery {
  address: OutboxAddress;
  item: OutboxItem;
  events: SendOutcomeEvents;
  to: Conversation;
  started: number;
  /** The `done` marker went out with the last part's commit. */
  doneWritten?: boolean;
}

/** What a delivery reads first, in one round trip: the action's ledger head and whether its trigger was recalled. */
export interface FirstLook {
  ledger: LedgerHead;
  recalled: boolean;
}

/**
 * Whether the trigger was recalled and the real ms left of the conversation's cooldown, read together; for a
 * fresh plan's first part also the token buckets' answer (`SendPacer.takeAhead`), asked in the same round trip.
 */
type Preflight = Promise<[recalled: boolean, cooldownLeftMs: number, tokens?: TokensAhead]>;

/** How the first attempt at a part may start without reading first. */
interface PartStart {
  /** The plan was written by this delivery just now: none of its parts has a ledger entry yet (CAS-checked). */
  fresh: boolean;
  /** The pre-pacing reads, already issued. */
  preflight?: Preflight;
}

/**
 * Delivers one queued reply, exactly once in effect (docs/adr/0009): plan it once (polish, split or fold), then for
 * each part wait for pacing, claim it in the ledger (`sending`), call the API and settle it. A definite refusal is
 * retried with backoff; anything that may have reached QQ (NapCat 1200, a lost response, a crash mid-call, `ok`
 * without an id) is verified against the conversation's recent history before anything is sent again — found, it
 * is `sent` with the id found; absent, it is sent again; unverifiable, it ends as `send.unknown`. Each settled part
 * and its event are one MULTI, so after a crash at any point a confirmed part is never sent again and an absent
 * one is sent. A part that fails stops the reply; a recalled trigger drops what is left of it.
 */
@Injectable()
export class ReplyDelivery {
  private readonly logger = new Logger('ReplyDelivery');
  private selfId: string | undefined;

  constructor(
    private readonly ledger: SendLedger,
    private readonly eventLog: EventLog,
    private readonly actions: OneBotActions,
    private readonly pacer: SendPacer,
    private readonly polisher: ReplyPolisher,
    private readonly metrics: SendMetrics,
    private readonly backoff: SendBackoff,
    private readonly clock: Clock,
    private readonly keys: Keyspace,
    private readonly config: QunliConfig,
    @Inject(REDIS) private readonly redis: Redis,
  ) {
    this.selfId = config.QUNLI_SELF_ID;
  }

  /**
   * The reads a delivery starts with, issued now (they go out in the same pipeline as whatever else is issued in
   * this tick, e.g. the enqueue). Never rejects: `undefined` means "read again in `deliver`".
   */
  lookAhead(address: OutboxAddress, item: OutboxItem): Promise<FirstLook | undefined> {
    return this.firstLook(address, item).catch(() => undefined);
  }

  private async firstLook(address: OutboxAddress, item: OutboxItem): Promise<FirstLook> {
    const [ledger, recalled] = await Promise.all([
      this.ledger.head(address.partition, item.event.payload.actionId),
      this.recalledTrigger(item),
    ]);
    return { ledger, recalled };
  }

  /** `first`: what `lookAhead` read for this reply (read here when absent). */
  async deliver(address: OutboxAddress, item: OutboxItem, first?: FirstLook): Promise<void> {
    const action = item.event.payload;
    const look = first ?? (await this.firstLook(address, item));
    if (SendLedger.parseDone(action.actionId, look.ledger.done)) return;
    const delivery: Delivery = {
      address,
      item,
      events: new SendOutcomeEvents(item.event, address.conversation, () => this.clock.now()),
      to:
        action.targetType === 'group'
          ? { type: 'group', groupId: action.targetId }
          : { type: 'private', userId: action.targetId },
      started: performance.now(),
    };
    const planned = await this.planFor(delivery, look);
    if (planned === undefined) return;
    let plan: Stored<ReplyPlan> = planned.plan;
    let start: PartStart = { fresh: planned.fresh, ...(planned.preflight && { preflight: planned.preflight }) };
    for (let index = 0; index < plan.value.parts.length; index++) {
      const result: PartResult =
        plan.value.form === 'forward'
          ? await this.settleForward(delivery, plan, start)
          : await this.settlePart(delivery, plan.value, index, start);
      start = { fresh: start.fresh && result.kind !== 'unfold' };
      if (result.kind === 'unfold') {
        plan = result.plan;
        index = -1;
        continue;
      }
      if (result.kind === 'stop') return this.finish(delivery, result.outcome);
      if (plan.value.form === 'forward') break;
    }
    await this.finish(delivery, 'delivered');
  }

  /**
   * The plan, made once: a recall before it drops the reply; an empty text is refused loudly. A plan written here
   * is `fresh`, and the first part's pre-pacing reads go out with its write.
   */
  private async planFor(
    d: Delivery,
    look: FirstLook,
  ): Promise<{ plan: Stored<ReplyPlan>; fresh: boolean; preflight?: Preflight } | undefined> {
    const action = d.item.event.payload;
    const existing = SendLedger.parsePlan(action.actionId, look.ledger.plan);
    if (existing) return { plan: existing, fresh: false };
    if (look.recalled) {
      await this.drop(d, undefined, 0);
      return undefined;
    }
    const plan = action.segments?.length
      ? this.contentPlan(action.text, action.segments, action.quoteMessageId)
      : await this.textPlan(action.text, action.quoteMessageId);
    if (plan === undefined) {
      this.metrics.rejected.inc({ reason: 'empty_text' });
      this.logger.error({
        code: 'SEND.EMPTY_TEXT',
        message: 'action.send has no text to send',
        actionId: action.actionId,
      });
      await this.writeDone(d, 'failed');
      return undefined;
    }
    this.metrics.queued.observe(Math.max(0, this.clock.since(d.item.event.createdAt)) / 1000 / this.clock.scale);
    const writing = this.ledger.compareAndSet(
      d.address.partition,
      SendLedger.planField(action.actionId),
      undefined,
      plan,
    );
    // Issued behind the write, so read after it, as if after it returned; unused if the write loses. The tokens
    // are taken with them: a reply that is not sent after all gives them back.
    const preflight = this.preflight(d, true);
    preflight.catch(() => undefined);
    const written = await writing;
    if (written) return { plan: written, fresh: true, preflight };
    await this.unusedTokens(d, preflight);
    // Someone planned it in between (a takeover): theirs is the plan.
    const theirs = await this.ledger.plan(d.address.partition, action.actionId);
    return theirs && { plan: theirs, fresh: false };
  }

  /** Text: polished once (falling back to the original), split and maybe folded (fold.rules.ts). */
  private async textPlan(original: string, quoteMessageId: string | undefined): Promise<ReplyPlan | undefined> {
    const { text, polished } = await this.polisher.polish(original);
    return planReply(
      text,
      {
        maxChars: this.config.QUNLI_SEND_MAX_SEGMENT_CHARS,
        maxMessages: this.config.QUNLI_SEND_MAX_MESSAGES,
        foldChars: this.config.QUNLI_SEND_FOLD_CHARS,
      },
      this.clock.now().toISOString(),
      polished,
      quoteMessageId,
    );
  }

  /** Content (a sticker): one part, sent as given, never polished or split; its text only names it. */
  private contentPlan(
    label: string,
    segments: { type: string; data: Record<string, string> }[],
    quoteMessageId: string | undefined,
  ): ReplyPlan {
    return {
      form: 'text',
      parts: [label.trim().length > 0 ? label : `[${segments[0]!.type}]`],
      segments,
      ...(quoteMessageId !== undefined ? { quoteMessageId } : {}),
      polished: false,
      at: this.clock.now().toISOString(),
    };
  }

  private segmentsOf(plan: ReplyPlan, index: number): OneBotSegment[] {
    const body = index === 0 && plan.segments?.length ? plan.segments : [Segment.text(plan.parts[index]!)];
    return index === 0 && plan.quoteMessageId !== undefined ? [Segment.reply(plan.quoteMessageId), ...body] : body;
  }

  private async settleForward(d: Delivery, plan: Stored<ReplyPlan>, start: PartStart): Promise<PartResult> {
    const result = await this.settle(d, plan.value, 'f', 0, start);
    if (result !== 'refused') return result;
    // The implementation cannot (or will not) send forward messages: fall back to the plain parts.
    const next = await this.ledger.compareAndSet(
      d.address.partition,
      SendLedger.planField(d.item.event.payload.actionId),
      plan,
      unfolded(plan.value, this.clock.now().toISOString()),
    );
    this.logger.warn({
      message: 'forward message refused; sending the plain parts',
      actionId: d.item.event.payload.actionId,
    });
    return {
      kind: 'unfold',
      plan: next ?? (await this.ledger.plan(d.address.partition, d.item.event.payload.actionId))!,
    };
  }

  private async settlePart(d: Delivery, plan: ReplyPlan, index: number, start: PartStart): Promise<PartResult> {
    const result = await this.settle(d, plan, index, index, start);
    return result === 'refused' ? { kind: 'stop', outcome: 'failed' } : result;
  }

  /**
   * Drive one part (a chat message, or the forward message as part `f`) to a settled state. `refused` is returned
   * only for a forward message the implementation refused, so the caller can fall back. `start` applies to the
   * first pass only: a fresh plan's part is known absent (the claim's compare-and-set still checks it).
   */
  private async settle(
    d: Delivery,
    plan: ReplyPlan,
    part: number | 'f',
    index: number,
    start: PartStart,
  ): Promise<PartResult | 'refused'> {
    const { partition } = d.address;
    const actionId = d.item.event.payload.actionId;
    const field = SendLedger.partField(actionId, part);
    const text = plan.form === 'forward' ? plan.parts.join('\n') : plan.parts[index]!;
    const maxAttempts = this.config.QUNLI_SEND_MAX_ATTEMPTS;
    let first: PartStart | undefined = start;
    for (;;) {
      const stored = first?.fresh ? undefined : await this.ledger.part(partition, actionId, part);
      const preflight = first?.preflight;
      first = undefined;
      const entry = stored?.value;
      const step = stepFor(entry);
      if (step.kind === 'settled') {
        switch (entry!.state) {
          case 'sent':
            return { kind: 'next' };
          case 'dropped':
            return { kind: 'stop', outcome: 'dropped' };
          case 'failed':
            return plan.form === 'forward' ? 'refused' : { kind: 'stop', outcome: 'failed' };
          case 'unknown':
          case 'pending':
          case 'sending':
          case 'unsure':
            return { kind: 'stop', outcome: 'unknown' };
        }
      }

      if (step.kind === 'verify') {
        const verdict = await this.verifyPart(d, plan, index, stored!, step.cause);
        if (verdict === 'retry') continue;
        return verdict;
      }

      const [recalled, cooldownLeftMs, tokens] = await (preflight ?? this.preflight(d));
      if (recalled) {
        await this.unusedTokens(d, preflight);
        return this.drop(d, plan, index);
      }
      await this.pacer.beforeSend(d.address, text, cooldownLeftMs, tokens);

      const sending: PartEntry = { state: 'sending', attempts: step.attempt, calledAt: Date.now(), at: this.now() };
      const claimed = await this.claimUnlessRecalled(d, field, stored, sending);
      if (claimed === 'recalled') return this.drop(d, plan, index);
      if (!claimed) continue; // changed under us (a takeover): read it again
      const outcome = await this.call(d, plan, index);
      const verdict = verdictFor(outcome, step.attempt, maxAttempts);
      switch (verdict.kind) {
        case 'sent':
          await this.commitSent(
            d,
            plan,
            part,
            index,
            { ...sending, state: 'sent', onebotMessageId: verdict.onebotMessageId, at: this.now() },
            verdict.onebotMessageId,
          );
          return { kind: 'next' };
        case 'refused': {
          const error = verdict.error;
          if (plan.form === 'forward' && outcome.kind === 'failed') {
            await this.ledger.compareAndSet(partition, field, claimed, {
              ...sending,
              state: 'failed',
              error,
              at: this.now(),
            });
            return 'refused';
          }
          if (!verdict.retryable) {
            await this.commitProblem(d, plan, part, index, 'failed', {
              ...sending,
              state: 'failed',
              error,
              at: this.now(),
              ...(verdict.retcode !== undefined && { retcode: verdict.retcode }),
            });
            return plan.form === 'forward' ? 'refused' : { kind: 'stop', outcome: 'failed' };
          }
          await this.ledger.compareAndSet(partition, field, claimed, {
            ...sending,
            state: 'pending',
            error,
            at: this.now(),
          });
          this.metrics.retries.inc();
          await this.backoff.wait(backoffMs(step.attempt, this.config.QUNLI_SEND_RETRY_BASE_MS), step.attempt);
          continue;
        }
        case 'unsure': {
          const unsure: PartEntry = {
            ...sending,
            state: 'unsure',
            cause: verdict.cause,
            error: verdict.error,
            verifications: 0,
            at: this.now(),
            ...(verdict.retcode !== undefined && { retcode: verdict.retcode }),
          };
          await this.ledger.compareAndSet(partition, field, claimed, unsure);
          this.logger.warn({
            message: 'send outcome unknown; verifying before any resend',
            actionId,
            part,
            error: verdict.error,
          });
          if (verdict.cause === 'risk_control') await this.pacer.coolDown(d.address);
          continue;
        }
      }
    }
  }

  private call(d: Delivery, plan: ReplyPlan, index: number): Promise<ApiOutcome<{ message_id: number }>> {
    if (plan.form === 'forward') {
      const uin = this.selfId ?? '10000';
      const name = this.config.nicknames[0] ?? '群友';
      return this.actions.sendForward(
        d.to,
        plan.parts.map((part) => ({ name, uin, content: [Segment.text(part)] })),
      );
    }
    return this.actions.sendMessage(d.to, this.segmentsOf(plan, index));
  }

  /** One verification round for a part whose outcome is unknown; `retry` means: read the ledger and go on. */
  private async verifyPart(
    d: Delivery,
    plan: ReplyPlan,
    index: number,
    stored: Stored<PartEntry>,
    cause: UnsureCause,
  ): Promise<PartResult | 'refused' | 'retry'> {
    const { partition } = d.address;
    const actionId = d.item.event.payload.actionId;
    const part = plan.form === 'forward' ? 'f' : index;
    const field = SendLedger.partField(actionId, part);
    const entry = stored.value;
    const maxAttempts = this.config.QUNLI_SEND_MAX_ATTEMPTS;
    const causeError: LedgerError = entry.error ?? {
      code: 'SEND.INTERRUPTED',
      message: 'outbound stopped during the API call',
    };
    // Give QQ the cooldown first: under risk control the history fills in late, and a resend would make it worse.
    await this.pacer.cooldownOver(d.address);
    const text = plan.form === 'forward' ? '' : plan.parts[index]!;
    const result = await this.verify(d, plan, text, entry.calledAt ?? Date.now() - 60_000);
    switch (result.kind) {
      case 'found': {
        this.metrics.verifications.inc({ result: 'found' });
        const verified = d.events.verified(
          index,
          result.messageId,
          result.method,
          causeError,
          result.examined,
          entry.retcode,
        );
        await this.commitSent(
          d,
          plan,
          part,
          index,
          { ...entry, state: 'sent', onebotMessageId: result.messageId, verified: true, at: this.now() },
          result.messageId,
          verified,
        );
        return { kind: 'next' };
      }
      case 'absent': {
        this.metrics.verifications.inc({ result: 'absent' });
        const verified = d.events.verified(index, undefined, result.method, causeError, result.examined, entry.retcode);
        if (entry.attempts >= maxAttempts) {
          await this.commitProblem(
            d,
            plan,
            part,
            index,
            'failed',
            { ...entry, state: 'failed', at: this.now() },
            verified,
          );
          return plan.form === 'forward' ? 'refused' : { kind: 'stop', outcome: 'failed' };
        }
        // Not delivered: the part may be sent again (the pacing and the cooldown still apply).
        await this.eventLog.appendAll([verified], (tx) => {
          tx.hset(
            this.ledger.key(partition),
            field,
            JSON.stringify({ ...entry, state: 'pending', at: this.now() } satisfies PartEntry),
          );
        });
        this.metrics.retries.inc();
        return 'retry';
      }
      case 'unavailable': {
        const verifications = (entry.verifications ?? 0) + 1;
        if (verifications < this.config.QUNLI_SEND_VERIFY_ATTEMPTS) {
          await this.ledger.compareAndSet(partition, field, stored, { ...entry, verifications, at: this.now() });
          await this.backoff.wait(backoffMs(verifications, this.config.QUNLI_SEND_RETRY_BASE_MS), verifications);
          return 'retry';
        }
        return this.unverifiable(d, plan, part, index, entry, cause, result.reason);
      }
      case 'impossible':
        return this.unverifiable(d, plan, part, index, entry, cause, result.reason);
    }
  }

  private async unverifiable(
    d: Delivery,
    plan: ReplyPlan,
    part: number | 'f',
    index: number,
    entry: PartEntry,
    cause: UnsureCause,
    reason: string,
  ): Promise<PartResult | 'refused' | 'retry'> {
    this.metrics.verifications.inc({ result: 'impossible' });
    const field = SendLedger.partField(d.item.event.payload.actionId, part);
    switch (whenUnverifiable(cause, entry.attempts, this.config.QUNLI_SEND_MAX_ATTEMPTS)) {
      case 'retry':
        await this.redis.hset(
          this.ledger.key(d.address.partition),
          field,
          JSON.stringify({ ...entry, state: 'pending', at: this.now() } satisfies PartEntry),
        );
        this.metrics.retries.inc();
        await this.backoff.wait(backoffMs(entry.attempts, this.config.QUNLI_SEND_RETRY_BASE_MS), entry.attempts);
        return 'retry';
      case 'failed':
        await this.commitProblem(d, plan, part, index, 'failed', { ...entry, state: 'failed', at: this.now() });
        return plan.form === 'forward' ? 'refused' : { kind: 'stop', outcome: 'failed' };
      case 'unknown': {
        const error: LedgerError = {
          code: 'SEND.UNVERIFIABLE',
          message: `${entry.error?.message ?? 'the outcome is unknown'}; verification impossible: ${reason}`,
        };
        await this.commitProblem(d, plan, part, index, 'unknown', {
          ...entry,
          state: 'unknown',
          error,
          at: this.now(),
        });
        this.logger.error({
          message: 'send outcome unknown and unverifiable; not resending',
          actionId: d.item.event.payload.actionId,
          part,
          reason,
        });
        return { kind: 'stop', outcome: 'unknown' };
      }
    }
  }

  /** Look for the part in the conversation's newest messages. */
  private async verify(d: Delivery, plan: ReplyPlan, text: string, calledAt: number): Promise<Verification> {
    const selfId = await this.botId();
    if (selfId === undefined)
      return { kind: 'unavailable', reason: 'the bot account is unknown (get_login_info failed)' };
    const method: VerificationMethod = d.to.type === 'group' ? 'group_history' : 'friend_history';
    const outcome = await this.actions.recentHistory(d.to, HISTORY_COUNT);
    switch (outcome.kind) {
      case 'ok': {
        const messages: HistoryMessage[] = Array.isArray(outcome.data?.messages) ? outcome.data.messages : [];
        const claimed = await this.claimed(d.address, messages);
        const found = findDelivered(messages, { selfId, text, form: plan.form, calledAt, claimed });
        return found === undefined
          ? { kind: 'absent', method, examined: messages.length }
          : { kind: 'found', messageId: found, method, examined: messages.length };
      }
      case 'failed':
        return { kind: 'impossible', reason: `${outcome.code}: ${outcome.message}` };
      case 'unknown':
      case 'unreachable':
        return { kind: 'unavailable', reason: `${outcome.code}: ${outcome.message}` };
    }
  }

  /** History message ids that are already known sends of the bot (not this part, whatever their text). */
  private async claimed(address: OutboxAddress, messages: readonly HistoryMessage[]): Promise<Set<string>> {
    const ids = messages.map((m) =>
      m.message_id === undefined || m.message_id === null ? '' : String(m.message_id as string | number),
    );
    const present = ids.filter((id) => id.length > 0);
    if (present.length === 0) return new Set();
    const scores = (await this.redis.call(
      'ZMSCORE',
      this.keys.sentMessages(address.partition),
      ...present.map((id) => sentMessageMember(address.conversation, id)),
    )) as (string | null)[];
    return new Set(present.filter((_, i) => scores[i] !== null));
  }

  private async botId(): Promise<string | undefined> {
    if (this.selfId !== undefined) return this.selfId;
    const login = await this.actions.api.call<{ user_id?: number | string }>('get_login_info', {});
    if (login.kind === 'ok' && login.data?.user_id !== undefined) this.selfId = String(login.data.user_id);
    return this.selfId;
  }

  /** The part is sent: its ledger entry, its `message.sent` (and verification) and the sent-ids store, atomically. */
  private async commitSent(
    d: Delivery,
    plan: ReplyPlan,
    part: number | 'f',
    index: number,
    entry: PartEntry,
    messageId: string,
    verified?: EventEnvelope,
  ): Promise<void> {
    const sent = d.events.sent(plan, index, entry, messageId);
    const key = this.keys.sentMessages(d.address.partition);
    // The last part sent is the reply delivered: its `done` marker goes in the same MULTI.
    const last = plan.form === 'forward' || index === plan.parts.length - 1;
    await this.eventLog.appendAll(verified ? [verified, sent] : [sent], (tx) => {
      const ledger = this.ledger.key(d.address.partition);
      tx.hset(ledger, SendLedger.partField(d.item.event.payload.actionId, part), JSON.stringify(entry));
      tx.zadd(key, this.clock.nowMs(), sentMessageMember(d.address.conversation, messageId));
      tx.zremrangebyrank(key, 0, -(SENT_IDS_PER_PARTITION + 1));
      if (last) {
        const done: ActionDone = { outcome: 'delivered', at: this.now() };
        tx.hset(ledger, SendLedger.doneField(d.item.event.payload.actionId), JSON.stringify(done));
      }
    });
    if (last) d.doneWritten = true;
    this.metrics.sends.inc({ outcome: 'sent' });
    this.metrics.latency.observe({ outcome: 'sent' }, (performance.now() - d.started) / 1000);
  }

  private async commitProblem(
    d: Delivery,
    plan: ReplyPlan,
    part: number | 'f',
    index: number,
    kind: 'failed' | 'unknown',
    entry: PartEntry,
    verified?: EventEnvelope,
  ): Promise<void> {
    const error = entry.error ?? { code: 'SEND.UNEXPLAINED', message: `ledger says ${entry.state}` };
    const problem = d.events.problem(kind, plan, index, entry, error);
    await this.eventLog.appendAll(verified ? [verified, problem] : [problem], (tx) => {
      tx.hset(
        this.ledger.key(d.address.partition),
        SendLedger.partField(d.item.event.payload.actionId, part),
        JSON.stringify(entry),
      );
    });
    this.metrics.sends.inc({ outcome: kind });
    this.metrics.latency.observe({ outcome: kind }, (performance.now() - d.started) / 1000);
  }

  private async recalledTrigger(item: OutboxItem): Promise<boolean> {
    const score = await this.redis.zscore(
      this.keys.recalledTriggers(item.sourcePartition),
      item.event.payload.triggerEventId,
    );
    return score !== null;
  }

  /**
   * The checks before pacing, as one round trip: is the trigger recalled, how long is the cooldown, and (`tokens`)
   * the token buckets' answer, so that a send that may go at once asks nothing more before its claim.
   */
  private preflight(d: Delivery, tokens = false): Preflight {
    return Promise.all([
      this.recalledTrigger(d.item),
      this.pacer.cooldownLeft(d.address),
      tokens ? this.pacer.takeAhead(d.address) : undefined,
    ]);
  }

  /** A preflight's tokens that no send will use go back to their buckets (best effort: a lost one refills). */
  private async unusedTokens(d: Delivery, preflight: Preflight | undefined): Promise<void> {
    const tokens = await preflight?.then(([, , ahead]) => ahead).catch(() => undefined);
    if (tokens) await this.pacer.giveBack(d.address, tokens).catch(() => undefined);
  }

  /**
   * The last recall check and the part's `sending` claim: one script when the recalled set is on the ledger's
   * slot (the reply goes to its own partition's conversation), else the check and then the claim.
   */
  private async claimUnlessRecalled(
    d: Delivery,
    field: string,
    stored: Stored<PartEntry> | undefined,
    sending: PartEntry,
  ): Promise<Stored<PartEntry> | 'recalled' | undefined> {
    const { partition } = d.address;
    if (d.item.sourcePartition === partition) {
      return this.ledger.compareAndSetUnlessRecalled(partition, field, stored, sending, {
        key: this.keys.recalledTriggers(partition),
        trigger: d.item.event.payload.triggerEventId,
      });
    }
    if (await this.recalledTrigger(d.item)) return 'recalled';
    return this.ledger.compareAndSet(partition, field, stored, sending);
  }

  /** The trigger was recalled: nothing more of this reply goes out. */
  private async drop(d: Delivery, plan: ReplyPlan | undefined, partsSent: number): Promise<PartResult> {
    const planned = plan === undefined ? 0 : plan.form === 'forward' ? 1 : plan.parts.length;
    const done: ActionDone = { outcome: 'dropped', at: this.now() };
    const left =
      plan === undefined
        ? d.item.event.payload.text
        : plan.form === 'forward'
          ? plan.parts.join('\n')
          : plan.parts[partsSent]!;
    await this.eventLog.appendAll([d.events.dropped(partsSent, planned, left)], (tx) => {
      tx.hset(
        this.ledger.key(d.address.partition),
        SendLedger.doneField(d.item.event.payload.actionId),
        JSON.stringify(done),
      );
    });
    this.metrics.sends.inc({ outcome: 'dropped' });
    this.logger.log({
      message: 'reply dropped: its trigger was recalled',
      actionId: d.item.event.payload.actionId,
      partsSent,
    });
    return { kind: 'stop', outcome: 'dropped' };
  }

  private async finish(d: Delivery, outcome: ActionDone['outcome']): Promise<void> {
    if (outcome === 'dropped') return; // written with its event
    if (outcome === 'delivered' && d.doneWritten) return; // written with the last part
    await this.writeDone(d, outcome);
  }

  private async writeDone(d: Delivery, outcome: ActionDone['outcome']): Promise<void> {
    const done: ActionDone = { outcome, at: this.now() };
    await this.redis.hset(
      this.ledger.key(d.address.partition),
      SendLedger.doneField(d.item.event.payload.actionId),
      JSON.stringify(done),
    );
  }

  private now(): string {
    return this.clock.now().toISOString();
  }
}
