import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { QunliConfig } from '@app/platform';
import { IngressMetrics } from './ingress.metrics.js';
import { tokenProblem } from './onebot-http.middleware.js';
import { MAX_INPUT_BYTES, OneBotSocketFeed } from './onebot-socket.feed.js';

export const ONEBOT_WS_PATH = '/onebot/v11/ws';

function refuse(socket: Duplex, status: number, reason: string, headers: string[] = []): void {
  socket.end([`HTTP/1.1 ${status} ${reason}`, 'Connection: close', ...headers, '', ''].join('\r\n'));
}

/**
 * Reverse WebSocket: the implementation connects to us at `/onebot/v11/ws` (also `/onebot/v11/ws/event`, for
 * implementations configured with separate event and API URLs) and pushes events. Runs on the app's own HTTP
 * server; the access token is checked on the upgrade.
 */
@Injectable()
export class OneBotReverseWsGateway implements BeforeApplicationShutdown {
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: MAX_INPUT_BYTES });
  private readonly accessToken: string | undefined;

  constructor(
    private readonly feed: OneBotSocketFeed,
    private readonly metrics: IngressMetrics,
    config: QunliConfig,
  ) {
    this.accessToken = config.ONEBOT_ACCESS_TOKEN;
  }

  attach(httpServer: Server): void {
    httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    if (path !== ONEBOT_WS_PATH && path !== `${ONEBOT_WS_PATH}/event`) {
      refuse(socket, 404, 'Not Found');
      return;
    }
    if (tokenProblem(this.accessToken, req)) {
      this.metrics.countRejected('unauthorized');
      refuse(socket, 401, 'Unauthorized', ['WWW-Authenticate: Bearer']);
      return;
    }
    this.server.handleUpgrade(req, socket, head, (ws) => {
      const selfId = req.headers['x-self-id'];
      const peer = `${req.socket.remoteAddress ?? '?'}${typeof selfId === 'string' ? ` self_id=${selfId}` : ''}`;
      this.feed.attach(ws, 'ws_reverse', peer);
    });
  }

  beforeApplicationShutdown(): void {
    // Upgraded sockets keep the HTTP server from closing, and a close handshake can wait on a dead peer for 30 s;
    // implementations reconnect on their own, so drop the connections outright.
    for (const client of this.server.clients) client.terminate();
    this.server.close();
  }
}
