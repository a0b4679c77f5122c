import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keyspace } from '@app/contracts';
import type { Metrics } from '@app/platform';
import { ApiCallMetrics } from './api-call.metrics.js';
import { classifyEnvelope, type ApiOutcome } from './api-outcome.rules.js';
import type { OneBotApi } from './onebot-api.js';
import type { OneBotApiResponse } from './onebot-types.js';
import { parseRelayReply, RELAY_ANY_ACCOUNT, type RelayReply, type RelayRequest } from './relay-protocol.js';
import { ECHO_PREFIX } from './ws-action-channel.js';

export interface OneBotRelayApiOptions {
  redis: Redis;
  keys: Keyspace;
  /** `QUNLI_SELF_ID`; without it, whichever connected account takes the call. */
  selfId?: string;
  timeoutMs: number;
  metrics?: Metrics;
}

/**
 * OneBot actions over the implementation's reverse-WebSocket connection to ingress (outbound's `ws_reverse`
 * transport), relayed through Redis: see `relay-protocol.ts`. Replies arrive on one pub/sub subscription shared by
 * every call of this process.
 */
export class OneBotRelayApi implements OneBotApi {
  readonly transport = 'ws_reverse' as const;
  private readonly subscriber: Redis;
  private readonly waiting = new Map<string, (reply: RelayReply) => void>();
  private subscribed: Promise<unknown> | undefined;
  private readonly account: string;
  private readonly metrics: ApiCallMetrics | undefined;

  constructor(private readonly options: OneBotRelayApiOptions) {
    this.account = options.selfId ?? RELAY_ANY_ACCOUNT;
    this.subscriber = options.redis.duplicate({ connectionName: 'qunli-relay-replies' });
    this.subscriber.on('message', (_channel: string, text: string) => {
      const reply = parseRelayReply(text);
      if (reply) this.waiting.get(reply.echo)?.(reply);
    });
    this.metrics = options.metrics ? new ApiCallMetrics(options.metrics) : undefined;
  }

  private subscribe(): Promise<unknown> {
    this.subscribed ??= this.subscriber.subscribe(this.options.keys.relayReplies).catch((error: unknown) => {
      this.subscribed = undefined;
      throw error;
    });
    return this.subscribed;
  }

  async call<T>(action: string, params: Record<string, unknown>): Promise<ApiOutcome<T>> {
    const started = performance.now();
    const outcome = await this.exchange<T>(action, params);
    this.metrics?.record(action, this.transport, outcome.kind, started);
    return outcome;
  }

  private async exchange<T>(action: string, params: Record<string, unknown>): Promise<ApiOutcome<T>> {
    const { redis, keys, timeoutMs } = this.options;
    try {
      await this.subscribe();
      if ((await redis.exists(keys.relayPresence(this.account))) === 0) {
        return {
          kind: 'unreachable',
          code: 'ONEBOT.NOT_CONNECTED',
          message: `no reverse WebSocket connection of ${this.account} is open at ingress`,
        };
      }
    } catch (error) {
      return { kind: 'unreachable', code: 'ONEBOT.RELAY_UNAVAILABLE', message: (error as Error).message };
    }
    const echo = `${ECHO_PREFIX}${randomUUID()}`;
    const request: RelayRequest = { echo, action, params, deadline: Date.now() + timeoutMs };
    const text = JSON.stringify(request);
    let timer: NodeJS.Timeout | undefined;
    const reply = new Promise<RelayReply | undefined>((resolve) => {
      this.waiting.set(echo, resolve);
      timer = setTimeout(() => resolve(undefined), timeoutMs + 1000);
    });
    try {
      try {
        await redis.rpush(keys.relayRequests(this.account), text);
      } catch (error) {
        return { kind: 'unreachable', code: 'ONEBOT.RELAY_UNAVAILABLE', message: (error as Error).message };
      }
      const answer = await reply;
      if (answer === undefined) return await this.unanswered<T>(text, action);
      switch (answer.outcome) {
        case 'response':
          return isEnvelope(answer.frame)
            ? classifyEnvelope(answer.frame as OneBotApiResponse<T>)
            : { kind: 'unknown', code: 'ONEBOT.BAD_RESPONSE', message: 'relayed response is not a OneBot envelope' };
        case 'not_sent':
          return { kind: 'unreachable', code: 'ONEBOT.NOT_CONNECTED', message: answer.reason };
        case 'lost':
          return { kind: 'unknown', code: 'ONEBOT.CONNECTION_LOST', message: answer.reason };
      }
    } finally {
      clearTimeout(timer);
      this.waiting.delete(echo);
    }
  }

  /** No reply: if the request is still queued nobody took it (nothing was sent), else its fate is unknown. */
  private async unanswered<T>(text: string, action: string): Promise<ApiOutcome<T>> {
    const { redis, keys, timeoutMs } = this.options;
    try {
      const removed = await redis.lrem(keys.relayRequests(this.account), 1, text);
      if (removed > 0) {
        return { kind: 'unreachable', code: 'ONEBOT.NOT_CONNECTED', message: `${action} was not taken by any ingress` };
      }
    } catch {
      // Redis unreachable: we cannot tell, so the outcome is unknown.
    }
    return {
      kind: 'unknown',
      code: 'ONEBOT.TIMEOUT',
      message: `no relayed response to ${action} within ${timeoutMs} ms`,
    };
  }

  async close(): Promise<void> {
    for (const resolve of this.waiting.values()) resolve({ echo: '', outcome: 'lost', reason: 'outbound stopping' });
    this.subscriber.disconnect();
    await Promise.resolve();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}

function isEnvelope(frame: unknown): boolean {
  return typeof frame === 'object' && frame !== null && typeof (frame as { retcode?: unknown }).retcode === 'number';
}
