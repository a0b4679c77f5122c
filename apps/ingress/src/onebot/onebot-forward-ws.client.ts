import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { WebSocket } from 'ws';
import { reconnectDelayMs } from '@app/onebot';
import { QunliConfig } from '@app/platform';
import { heartbeatDeadlineMs } from './heartbeat.rules.js';
import { OneBotSocketFeed } from './onebot-socket.feed.js';

interface ForwardConnection {
  url: string;
  socket: WebSocket | undefined;
  retry: NodeJS.Timeout | undefined;
  watchdog: NodeJS.Timeout | undefined;
  failures: number;
}

/**
 * Forward WebSocket: when `ONEBOT_WS_URL` is set (a comma list for several implementations or accounts), ingress
 * connects to each and reads its events, reconnecting with capped exponential backoff and jitter for as long as
 * the app runs. A heartbeat watchdog drops a connection that went silent for twice the `interval` its heartbeats
 * announce (a half-open TCP connection never closes by itself), and the reconnect follows.
 */
@Injectable()
export class OneBotForwardWsClient implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('OneBotForwardWsClient');
  private readonly connections: ForwardConnection[];
  private readonly accessToken: string | undefined;
  private readonly maxPayload: number;
  private stopped = false;

  constructor(
    private readonly feed: OneBotSocketFeed,
    config: QunliConfig,
  ) {
    this.accessToken = config.ONEBOT_ACCESS_TOKEN;
    this.maxPayload = config.QUNLI_INGRESS_MAX_BYTES;
    const urls = (config.ONEBOT_WS_URL ?? '')
      .split(',')
      .map((u) => u.trim())
      .filter((u) => u.length > 0);
    this.connections = urls.map((url) => ({
      url,
      socket: undefined,
      retry: undefined,
      watchdog: undefined,
      failures: 0,
    }));
  }

  onApplicationBootstrap(): void {
    for (const connection of this.connections) this.connect(connection);
  }

  private connect(connection: ForwardConnection): void {
    if (this.stopped) return;
    const headers: Record<string, string> = {};
    if (this.accessToken) headers.Authorization = `Bearer ${this.accessToken}`;
    const socket = new WebSocket(connection.url, { headers, maxPayload: this.maxPayload });
    connection.socket = socket;
    const arm = (ms: number): void => {
      clearTimeout(connection.watchdog);
      connection.watchdog = setTimeout(() => {
        this.logger.warn(`no frame from ${connection.url} for ${ms} ms; dropping the connection`);
        socket.terminate();
      }, ms);
    };
    let deadline: number | undefined;
    socket.on('open', () => {
      connection.failures = 0;
      this.feed.attach(socket, 'ws_forward', connection.url, {
        selfId: 'unknown',
        onFrame: (frame) => {
          // Any JSON can arrive here (`null` included): only a heartbeat object sets the watchdog's deadline.
          const heartbeat = typeof frame === 'object' && frame !== null ? (frame as Record<string, unknown>) : {};
          if (heartbeat.meta_event_type === 'heartbeat' && typeof heartbeat.interval === 'number') {
            deadline = heartbeatDeadlineMs(heartbeat.interval) ?? deadline;
          }
          if (deadline !== undefined) arm(deadline);
        },
      });
    });
    socket.on('error', (error: Error) => {
      // A failed connect emits `error` and then `close`; the reconnect is scheduled there.
      this.logger.warn(`OneBot forward WebSocket ${connection.url}: ${error.message}`);
    });
    socket.on('close', () => {
      clearTimeout(connection.watchdog);
      if (connection.socket === socket) connection.socket = undefined;
      this.scheduleReconnect(connection);
    });
  }

  private scheduleReconnect(connection: ForwardConnection): void {
    if (this.stopped) return;
    connection.failures += 1;
    const delay = reconnectDelayMs(connection.failures, Math.random());
    this.logger.log(`reconnecting to ${connection.url} in ${delay} ms (attempt ${connection.failures})`);
    connection.retry = setTimeout(() => this.connect(connection), delay);
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    for (const connection of this.connections) {
      clearTimeout(connection.retry);
      clearTimeout(connection.watchdog);
      connection.socket?.terminate();
    }
  }
}
