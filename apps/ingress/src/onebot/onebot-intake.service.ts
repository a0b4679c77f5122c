import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { EventKind, Keyspace, ValidationFailed, type MessageRecalledPayload } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { PersonaPolicy } from '@app/persona';
import { Clock, QunliConfig, REDIS } from '@app/platform';
import { IngressDeadLetters } from './ingress-dead-letters.store.js';
import { IngressMetrics, type Transport } from './ingress.metrics.js';
import { OneBotConnections } from './onebot-connections.js';
import {
  eventFor,
  normaliseOneBotEvent,
  postTypeLabel,
  type Accepted,
  type AcceptedMessage,
  type IgnoreReason,
  type NormaliserSettings,
  type PayloadProblem,
} from './onebot-event.normaliser.js';
import { withDirectness } from './onebot-message.normaliser.js';
import { SentMessageIds } from './sent-message-ids.store.js';

/** How long an HTTP POST waits for Redis to take the event before answering 503 (the implementation retries). */
export const APPEND_TIMEOUT_MS = 5_000;

export type IntakeOutcome =
  | { status: 'accepted'; kind: EventKind; eventId: string; entryId: string }
  | { status: 'duplicate' }
  | { status: 'ignored'; reason: IgnoreReason }
  | { status: 'rejected'; problem: PayloadProblem }
  /** Redis did not take the event; nothing was acknowledged upstream. */
  | { status: 'unavailable'; message: string };

export interface IntakeOptions {
  /**
   * Answer `unavailable` at once when Redis is not connected, and after `APPEND_TIMEOUT_MS` otherwise, so an HTTP
   * caller can retry. Without it the append waits for Redis to come back (WebSocket frames have no retry).
   */
  failFast: boolean;
  /** The raw input, kept in the dead-letter stream when it is refused. */
  raw?: string | Buffer;
  /** Who sent it (for the dead-letter stream and logs). */
  peer?: string;
}

class AppendTimeout extends Error {}

const DISCONNECTED = new Set(['reconnecting', 'close', 'end']);

/** The names the bot answers to: `QUNLI_NICKNAMES`, or by default the persona's name and aliases. */
export function answeringNames(config: QunliConfig, persona: PersonaPolicy): string[] {
  const configured = config.nicknames;
  return configured.length > 0 ? configured : [persona.identity.name, ...persona.identity.aliases];
}

/**
 * The one path every transport feeds: normalise, settle whether a quote is of the bot (sent-ids store), record
 * what was decided, and append each accepted input once (dedup across transports and retries). Resolves only after
 * Redis acknowledged the append, so a caller that answers "accepted" never loses the event.
 */
@Injectable()
export class OneBotIntake {
  private readonly logger = new Logger('OneBotIntake');
  readonly settings: NormaliserSettings;
  private readonly dedupSeconds: number;

  constructor(
    private readonly eventLog: EventLog,
    private readonly metrics: IngressMetrics,
    private readonly connections: OneBotConnections,
    private readonly deadLetters: IngressDeadLetters,
    private readonly sentIds: SentMessageIds,
    private readonly clock: Clock,
    private readonly keys: Keyspace,
    @Inject(REDIS) private readonly redis: Redis,
    config: QunliConfig,
    persona: PersonaPolicy,
  ) {
    this.settings = {
      nicknames: answeringNames(config, persona),
      groups: config.groups,
      otherBots: config.otherBots,
      commandPrefixes: config.commandPrefixes,
      maxTextChars: config.QUNLI_MAX_TEXT_CHARS,
      maxSegments: config.QUNLI_INGRESS_MAX_SEGMENTS,
      maxTypedChars: config.QUNLI_INGRESS_MAX_TEXT_CHARS,
    };
    if (config.QUNLI_SELF_ID !== undefined) this.settings.selfId = config.QUNLI_SELF_ID;
    this.dedupSeconds = config.QUNLI_INGRESS_DEDUP_SECONDS;
  }

  async ingest(input: unknown, transport: Transport, options: IntakeOptions): Promise<IntakeOutcome> {
    this.metrics.countReceived(transport, postTypeLabel(input));
    const decision = normaliseOneBotEvent(input, this.settings);
    if ('ignore' in decision) {
      if (decision.signal) this.connections.signal(decision.signal);
      this.metrics.countIgnored(decision.ignore);
      return { status: 'ignored', reason: decision.ignore };
    }
    if ('reject' in decision) return this.reject(decision.reject, transport, options);
    if (decision.repairedStrings) this.metrics.countRepaired(decision.repairedStrings);

    // While the connection is being re-established ioredis would queue the append; an HTTP caller gets its answer
    // now instead, and retries. A first connect in progress is worth the wait.
    if (options.failFast && DISCONNECTED.has(this.redis.status)) {
      return this.unavailable(transport, `redis is ${this.redis.status}`);
    }
    try {
      const work = this.append(decision.accept);
      return options.failFast ? await withTimeout(work, APPEND_TIMEOUT_MS) : await work;
    } catch (error) {
      if (error instanceof ValidationFailed) {
        const first = error.fields[0];
        // The normaliser should never produce an invalid envelope; when it does, the input is what made it so.
        return this.reject(
          { field: first?.path ?? '$', message: error.message, reason: 'invalid_payload' },
          transport,
          options,
        );
      }
      const message = error instanceof AppendTimeout ? error.message : (error as Error).message;
      return this.unavailable(transport, message);
    }
  }

  /** Refuse an input that never reached the normaliser (bad JSON, too large, a bad signature …). */
  refuse(problem: PayloadProblem, transport: Transport, options: Omit<IntakeOptions, 'failFast'>): IntakeOutcome {
    return this.reject(problem, transport, { ...options, failFast: false });
  }

  private async append(accepted: Accepted): Promise<IntakeOutcome> {
    const settled = await this.settle(accepted);
    const event = eventFor(settled, this.clock.now());
    if (settled.kind === EventKind.MessageEchoed) {
      // A message outbound sent is already in the log as its `message.sent` (and in the store): the echo would
      // only record it twice.
      if (await this.sentIds.isBots(settled.groupId, settled.payload.messageId)) {
        this.metrics.countIgnored('self');
        return { status: 'ignored', reason: 'self' };
      }
      // Before the append: once the echo is in the log, a quote of it must already read as a quote of the bot.
      await this.sentIds.remember(settled.groupId, settled.payload.messageId);
    }
    const result = await this.eventLog.appendOnce(event, settled.dedupKey, this.dedupSeconds);
    if (!result.appended) {
      this.metrics.countDuplicate();
      return { status: 'duplicate' };
    }
    this.metrics.countAccepted(settled.kind);
    if ('unknownSegmentTypes' in settled) this.metrics.countUnknownSegments(settled.unknownSegmentTypes);
    return { status: 'accepted', kind: settled.kind, eventId: event.id, entryId: result.id };
  }

  /** What only the stores know: whether a quote is of the bot, which event a recall withdraws. */
  private async settle(accepted: Accepted): Promise<Accepted> {
    switch (accepted.kind) {
      case EventKind.MessageObserved:
      case EventKind.MessageDirect:
        return this.settleQuote(accepted);
      case EventKind.MessageRecalled: {
        const eventId = await this.redis.get(
          this.keys.dedup(this.keys.partitionOf(accepted.groupId), accepted.originalDedupKey),
        );
        if (eventId === null) return accepted;
        const payload: MessageRecalledPayload = { ...accepted.payload, eventId };
        return { ...accepted, payload };
      }
      case EventKind.MessageEchoed:
      case EventKind.NoticeReceived:
      case EventKind.RequestReceived:
        return accepted;
    }
  }

  private async settleQuote(message: AcceptedMessage): Promise<AcceptedMessage> {
    const quoted = message.clues.replyTo;
    if (quoted === undefined || message.clues.private || message.clues.poke) return message;
    const quotesBot = await this.sentIds.isBots(message.groupId, quoted);
    return quotesBot ? withDirectness(message, true) : message;
  }

  private reject(problem: PayloadProblem, transport: Transport, options: IntakeOptions): IntakeOutcome {
    this.metrics.countRejected(problem.reason);
    this.deadLetters.record(transport, problem, options.raw, options.peer ?? transport);
    this.logger.warn(`rejected OneBot input via ${transport} (${problem.reason}): ${problem.field} ${problem.message}`);
    return { status: 'rejected', problem };
  }

  private unavailable(transport: Transport, message: string): IntakeOutcome {
    this.metrics.countUnavailable(transport);
    this.logger.error(`event log unavailable, OneBot input via ${transport} not taken: ${message}`);
    return { status: 'unavailable', message };
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rejectTimeout) => {
    timer = setTimeout(() => rejectTimeout(new AppendTimeout(`redis did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
