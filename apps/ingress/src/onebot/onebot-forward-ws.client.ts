import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { WebSocket } from 'ws';
import { QunliConfig } from '@app/platform';
import { MAX_INPUT_BYTES, OneBotSocketFeed } from './onebot-socket.feed.js';
import { reconnectDelayMs } from './reconnect.policy.js';

/**
 * Forward WebSocket: when `ONEBOT_WS_URL` is set, ingress connects to the implementation's WebSocket server and
 * reads events from it, reconnecting with capped exponential backoff for as long as the app runs.
 */
@Injectable()
export class OneBotForwardWsClient implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('OneBotForwardWsClient');
  private readonly url: string | undefined;
  private readonly accessToken: string | undefined;
  private socket: WebSocket | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;

  constructor(
    private readonly feed: OneBotSocketFeed,
    config: QunliConfig,
  ) {
    this.url = config.ONEBOT_WS_URL;
    this.accessToken = config.ONEBOT_ACCESS_TOKEN;
  }

  onApplicationBootstrap(): void {
    if (this.url !== undefined) this.connect(this.url);
  }

  private connect(url: string): void {
    const headers: Record<string, string> = {};
    if (this.accessToken) headers.Authorization = `Bearer ${this.accessToken}`;
    const socket = new WebSocket(url, { headers, maxPayload: MAX_INPUT_BYTES });
    this.socket = socket;
    socket.on('open', () => {
      this.failures = 0;
      this.feed.attach(socket, 'ws_forward', url);
    });
    socket.on('error', (error: Error) => {
      // A failed connect emits `error` and then `close`; the reconnect is scheduled there.
      this.logger.warn(`OneBot forward WebSocket ${url}: ${error.message}`);
    });
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined;
      this.scheduleReconnect(url);
    });
  }

  private scheduleReconnect(url: string): void {
    if (this.stopped) return;
    this.failures += 1;
    const delay = reconnectDelayMs(this.failures, Math.random());
    this.logger.log(`reconnecting to ${url} in ${delay} ms (attempt ${this.failures})`);
    this.retry = setTimeout(() => this.connect(url), delay);
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.socket?.terminate();
  }
}
