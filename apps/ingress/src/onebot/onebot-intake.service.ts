import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { ValidationFailed } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { Clock, QunliConfig, REDIS } from '@app/platform';
import { IngressMetrics, type Transport } from './ingress.metrics.js';
import {
  messageEvent,
  normaliseOneBotEvent,
  postTypeLabel,
  type IgnoreReason,
  type MessageKind,
  type NormaliserSettings,
  type PayloadProblem,
} from './onebot-event.normaliser.js';

/** How long an HTTP POST waits for Redis to take the event before answering 503 (the implementation retries). */
export const APPEND_TIMEOUT_MS = 5_000;
/** An upstream retry of the same message within this window is recognised as a duplicate. */
export const DEDUP_TTL_SECONDS = 600;

export type IntakeOutcome =
  | { status: 'accepted'; kind: MessageKind; eventId: string; entryId: string }
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
}

class AppendTimeout extends Error {}

const DISCONNECTED = new Set(['reconnecting', 'close', 'end']);

/**
 * The one path every transport feeds: normalise, record what was decided, and append accepted messages once.
 * Resolves only after Redis acknowledged the append, so a caller that answers "accepted" never loses the event.
 */
@Injectable()
export class OneBotIntake {
  private readonly logger = new Logger('OneBotIntake');
  private readonly settings: NormaliserSettings;

  constructor(
    private readonly eventLog: EventLog,
    private readonly metrics: IngressMetrics,
    private readonly clock: Clock,
    @Inject(REDIS) private readonly redis: Redis,
    config: QunliConfig,
  ) {
    this.settings = {
      nicknames: config.nicknames,
      groups: config.groups,
      maxTextChars: config.QUNLI_MAX_TEXT_CHARS,
    };
    if (config.QUNLI_SELF_ID !== undefined) this.settings.selfId = config.QUNLI_SELF_ID;
  }

  async ingest(input: unknown, transport: Transport, options: IntakeOptions): Promise<IntakeOutcome> {
    this.metrics.countReceived(transport, postTypeLabel(input));
    const decision = normaliseOneBotEvent(input, this.settings);
    if ('ignore' in decision) {
      if (decision.signal) this.metrics.recordConnection(decision.signal);
      this.metrics.countIgnored(decision.ignore);
      return { status: 'ignored', reason: decision.ignore };
    }
    if ('reject' in decision) return this.rejected(decision.reject, transport);

    const accepted = decision.accept;
    const event = messageEvent(accepted, this.clock.now());
    // While the connection is being re-established ioredis would queue the append; an HTTP caller gets its answer
    // now instead, and retries. A first connect in progress is worth the wait.
    if (options.failFast && DISCONNECTED.has(this.redis.status)) {
      return this.unavailable(transport, `redis is ${this.redis.status}`);
    }
    let result;
    try {
      const append = this.eventLog.appendOnce(event, accepted.dedupKey, DEDUP_TTL_SECONDS);
      result = options.failFast ? await withTimeout(append, APPEND_TIMEOUT_MS) : await append;
    } catch (error) {
      if (error instanceof ValidationFailed) {
        const first = error.fields[0];
        // The normaliser should never produce an invalid envelope; when it does, the input is what made it so.
        return this.rejected({ field: first?.path ?? '$', message: error.message }, transport);
      }
      const message = error instanceof AppendTimeout ? error.message : (error as Error).message;
      return this.unavailable(transport, message);
    }
    if (!result.appended) {
      this.metrics.countDuplicate();
      return { status: 'duplicate' };
    }
    this.metrics.countAccepted(accepted.kind);
    this.metrics.countUnknownSegments(accepted.unknownSegmentTypes);
    return { status: 'accepted', kind: accepted.kind, eventId: event.id, entryId: result.id };
  }

  private rejected(problem: PayloadProblem, transport: Transport): IntakeOutcome {
    this.metrics.countRejected('invalid_payload');
    this.logger.warn(`rejected invalid OneBot payload via ${transport}: ${problem.field} ${problem.message}`);
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
