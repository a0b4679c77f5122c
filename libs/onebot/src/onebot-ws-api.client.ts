import { WebSocket, type RawData } from 'ws';
import type { Metrics } from '@app/platform';
import { ApiCallMetrics } from './api-call.metrics.js';
import type { ApiOutcome } from './api-outcome.rules.js';
import type { OneBotApi } from './onebot-api.js';
import { reconnectDelayMs } from './reconnect.policy.js';
import { WsActionChannel } from './ws-action-channel.js';

export interface OneBotWsApiOptions {
  /** `ONEBOT_WS_URL`: the implementation's forward WebSocket server. */
  url: string;
  accessToken?: string;
  /** `QUNLI_ONEBOT_TIMEOUT_MS`: waiting for a response, and for a connection in progress. */
  timeoutMs: number;
  metrics?: Metrics;
  log?: (message: string) => void;
}

/**
 * OneBot actions over our own forward WebSocket connection to the implementation (outbound's `ws_forward`
 * transport). Keeps one connection open, reconnecting with capped backoff and jitter; events the implementation
 * pushes on it are ignored (ingress reads its own connection). A call made while the connection is being
 * (re)established waits for it up to the timeout, then is `unreachable`.
 */
export class OneBotWsApi implements OneBotApi {
  readonly transport = 'ws_forward' as const;
  private socket: WebSocket | undefined;
  private channel: WsActionChannel | undefined;
  private opened: Promise<void> | undefined;
  private markOpen: (() => void) | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;
  private readonly metrics: ApiCallMetrics | undefined;

  constructor(private readonly options: OneBotWsApiOptions) {
    this.metrics = options.metrics ? new ApiCallMetrics(options.metrics) : undefined;
  }

  start(): void {
    this.connect();
  }

  private connect(): void {
    if (this.stopped) return;
    this.opened = new Promise<void>((resolve) => (this.markOpen = resolve));
    const headers: Record<string, string> = {};
    if (this.options.accessToken) headers.Authorization = `Bearer ${this.options.accessToken}`;
    const socket = new WebSocket(this.options.url, { headers, handshakeTimeout: this.options.timeoutMs });
    const channel = new WsActionChannel(socket, this.options.timeoutMs);
    this.socket = socket;
    this.channel = channel;
    socket.on('open', () => {
      this.failures = 0;
      this.markOpen?.();
    });
    socket.on('message', (data) => {
      let frame: unknown;
      try {
        frame = JSON.parse(rawText(data));
      } catch {
        return;
      }
      channel.offer(frame);
    });
    socket.on('error', (error: Error) => this.options.log?.(`forward WebSocket ${this.options.url}: ${error.message}`));
    socket.on('close', (code: number) => {
      channel.closed(`code ${code}`);
      if (this.socket !== socket) return;
      this.socket = undefined;
      if (this.stopped) return;
      this.failures += 1;
      this.retry = setTimeout(() => this.connect(), reconnectDelayMs(this.failures, Math.random()));
    });
  }

  async call<T>(action: string, params: Record<string, unknown>): Promise<ApiOutcome<T>> {
    const started = performance.now();
    if (this.channel && !this.channel.open && this.opened) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.opened,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.timeoutMs))),
      ]);
      clearTimeout(timer);
    }
    const outcome: ApiOutcome<T> = this.channel
      ? await this.channel.call<T>(action, params)
      : { kind: 'unreachable', code: 'ONEBOT.NOT_CONNECTED', message: 'the forward WebSocket was never started' };
    this.metrics?.record(action, this.transport, outcome.kind, started);
    return outcome;
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const socket = this.socket;
    this.socket = undefined;
    this.channel?.closed('client stopped');
    socket?.terminate();
    await Promise.resolve();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
