import { Agent, request } from 'undici';
import { QunliError } from '@app/contracts';
import type { Metrics, QunliConfig } from '@app/platform';
import { ApiCallMetrics } from './api-call.metrics.js';
import { classifyHttpResponse, classifyTransportError, type ApiOutcome } from './api-outcome.rules.js';
import { onebotId, type OneBotApi } from './onebot-api.js';
import type { LoginInfo, OneBotSegment, SendMessageResult } from './onebot-types.js';

export interface OneBotHttpApiOptions {
  /** `ONEBOT_HTTP_API_URL`; actions are POSTed to `<baseUrl>/<action>`. */
  baseUrl: string;
  /** `ONEBOT_ACCESS_TOKEN`, sent as `Authorization: Bearer …` when set. */
  accessToken?: string;
  /** `QUNLI_ONEBOT_TIMEOUT_MS`: bounds connecting, and separately waiting for the answer. */
  timeoutMs: number;
  metrics?: Metrics;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, cause, errors } = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string') return code;
  // Node's happy-eyeballs connect raises an AggregateError; fetch-style wrappers put the reason in `cause`.
  if (Array.isArray(errors) && errors.length > 0) return errorCode(errors[0]);
  if (cause !== undefined) return errorCode(cause);
  return undefined;
}

/**
 * Client for the OneBot v11 HTTP API (NapCat, Lagrange, go-cqhttp …). Every call resolves to a classified
 * outcome and never throws for anything the peer or the network did; the caller decides what each outcome means
 * for its side effects (see `api-outcome.rules.ts`).
 */
export class OneBotHttpApi implements OneBotApi {
  readonly transport = 'http' as const;
  private readonly agent: Agent;
  private readonly base: URL;
  private readonly metrics: ApiCallMetrics | undefined;

  constructor(private readonly options: OneBotHttpApiOptions) {
    try {
      this.base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
    } catch {
      throw new QunliError('ONEBOT.BAD_CONFIG', `ONEBOT_HTTP_API_URL is not a URL: ${options.baseUrl}`, {
        baseUrl: options.baseUrl,
      });
    }
    this.agent = new Agent({
      connect: { timeout: options.timeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    this.metrics = options.metrics ? new ApiCallMetrics(options.metrics) : undefined;
  }

  static fromConfig(config: QunliConfig, metrics?: Metrics): OneBotHttpApi {
    if (!config.ONEBOT_HTTP_API_URL) {
      throw new QunliError('ONEBOT.BAD_CONFIG', 'ONEBOT_HTTP_API_URL is not set');
    }
    return new OneBotHttpApi({
      baseUrl: config.ONEBOT_HTTP_API_URL,
      ...(config.ONEBOT_ACCESS_TOKEN !== undefined && { accessToken: config.ONEBOT_ACCESS_TOKEN }),
      timeoutMs: config.QUNLI_ONEBOT_TIMEOUT_MS,
      ...(metrics && { metrics }),
    });
  }

  sendGroupMsg(groupId: string, segments: OneBotSegment[]): Promise<ApiOutcome<SendMessageResult>> {
    return this.call<SendMessageResult>('send_group_msg', { group_id: onebotId(groupId), message: segments });
  }

  sendPrivateMsg(userId: string, segments: OneBotSegment[]): Promise<ApiOutcome<SendMessageResult>> {
    return this.call<SendMessageResult>('send_private_msg', { user_id: onebotId(userId), message: segments });
  }

  getLoginInfo(): Promise<ApiOutcome<LoginInfo>> {
    return this.call<LoginInfo>('get_login_info', {});
  }

  /** POST `/<action>` with the params as JSON body. */
  async call<T>(action: string, params: Record<string, unknown>): Promise<ApiOutcome<T>> {
    const started = performance.now();
    const outcome = await this.exchange<T>(action, params);
    this.metrics?.record(action, this.transport, outcome.kind, started);
    return outcome;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Nest calls this on shutdown when the client is a provider. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  private async exchange<T>(action: string, params: Record<string, unknown>): Promise<ApiOutcome<T>> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.options.accessToken) headers.authorization = `Bearer ${this.options.accessToken}`;
    try {
      const response = await request(new URL(action, this.base), {
        method: 'POST',
        headers,
        body: JSON.stringify(params),
        dispatcher: this.agent,
      });
      const text = await response.body.text();
      return classifyHttpResponse<T>(response.statusCode, text);
    } catch (error) {
      return classifyTransportError(errorCode(error), error instanceof Error ? error.message : String(error));
    }
  }
}
