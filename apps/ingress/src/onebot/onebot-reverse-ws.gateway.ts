import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { WsActionChannel } from '@app/onebot';
import { QunliConfig } from '@app/platform';
import { OneBotActionRelay } from './onebot-action.relay.js';
import { tokenProblem } from './onebot-http.middleware.js';
import { OneBotIntake } from './onebot-intake.service.js';
import { OneBotSocketFeed } from './onebot-socket.feed.js';

export const ONEBOT_WS_PATH = '/onebot/v11/ws';

export const CLIENT_ROLES = ['Universal', 'Event', 'API'] as const;
export type ClientRole = (typeof CLIENT_ROLES)[number];

/** Paths of the reverse WebSocket and the role each implies (OneBot v11: universal, or separate event and API). */
const PATH_ROLES: ReadonlyMap<string, ClientRole | undefined> = new Map([
  [ONEBOT_WS_PATH, undefined],
  [`${ONEBOT_WS_PATH}/universal`, 'Universal'],
  [`${ONEBOT_WS_PATH}/event`, 'Event'],
  [`${ONEBOT_WS_PATH}/api`, 'API'],
]);

export type RoleDecision = { role: ClientRole } | { refuse: string };

/**
 * The role of a reverse WebSocket connection: `X-Client-Role` (case-insensitive) or the path's, Universal when
 * neither says. A role the header and the path disagree on, or one OneBot does not define, is refused.
 */
export function roleOf(header: string | undefined, pathRole: ClientRole | undefined): RoleDecision {
  if (header === undefined || header.trim() === '') return { role: pathRole ?? 'Universal' };
  const role = CLIENT_ROLES.find((r) => r.toLowerCase() === header.trim().toLowerCase());
  if (!role) return { refuse: `X-Client-Role must be one of ${CLIENT_ROLES.join(', ')} (got ${header.slice(0, 40)})` };
  if (pathRole !== undefined && role !== pathRole) {
    return { refuse: `X-Client-Role ${role} does not match the ${pathRole} endpoint` };
  }
  return { role };
}

function refuse(socket: Duplex, status: number, reason: string, body?: string, headers: string[] = []): void {
  const lines = [`HTTP/1.1 ${status} ${reason}`, 'Connection: close', ...headers];
  if (body !== undefined)
    lines.push('Content-Type: application/json; charset=utf-8', `Content-Length: ${Buffer.byteLength(body)}`);
  socket.end([...lines, '', body ?? ''].join('\r\n'));
}

/**
 * Reverse WebSocket: the implementation connects to us at `/onebot/v11/ws` (or `/event`, `/api`, `/universal`
 * for implementations configured with separate URLs) and pushes events; Universal and API connections also carry
 * outbound's actions (the relay). Runs on the app's own HTTP server; token and role are checked on the upgrade.
 */
@Injectable()
export class OneBotReverseWsGateway implements BeforeApplicationShutdown {
  private readonly server: WebSocketServer;
  private readonly accessToken: string | undefined;
  private readonly timeoutMs: number;

  constructor(
    private readonly feed: OneBotSocketFeed,
    private readonly intake: OneBotIntake,
    private readonly relay: OneBotActionRelay,
    config: QunliConfig,
  ) {
    this.accessToken = config.ONEBOT_ACCESS_TOKEN;
    this.timeoutMs = config.QUNLI_ONEBOT_TIMEOUT_MS;
    this.server = new WebSocketServer({ noServer: true, maxPayload: config.QUNLI_INGRESS_MAX_BYTES });
  }

  attach(httpServer: Server): void {
    httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    if (!PATH_ROLES.has(path)) {
      refuse(socket, 404, 'Not Found');
      return;
    }
    const peer = req.socket.remoteAddress ?? '?';
    const problem = tokenProblem(this.accessToken, req);
    if (problem) {
      this.intake.refuse({ field: 'Authorization', message: problem.message, reason: 'unauthorized' }, 'ws_reverse', {
        peer,
      });
      refuse(socket, 401, 'Unauthorized', JSON.stringify({ error: problem.toJSON() }), ['WWW-Authenticate: Bearer']);
      return;
    }
    const roleHeader = req.headers['x-client-role'];
    const decision = roleOf(Array.isArray(roleHeader) ? roleHeader[0] : roleHeader, PATH_ROLES.get(path));
    if ('refuse' in decision) {
      const outcome = this.intake.refuse(
        { field: 'X-Client-Role', message: decision.refuse, reason: 'bad_role' },
        'ws_reverse',
        { peer },
      );
      const body =
        outcome.status === 'rejected'
          ? JSON.stringify({ error: { code: 'ONEBOT.BAD_ROLE', field: 'X-Client-Role', message: decision.refuse } })
          : '';
      refuse(socket, 400, 'Bad Request', body);
      return;
    }
    const selfHeader = req.headers['x-self-id'];
    const selfId =
      typeof selfHeader === 'string' && /^[0-9]{1,20}$/.test(selfHeader.trim()) ? selfHeader.trim() : 'unknown';
    this.server.handleUpgrade(req, socket, head, (ws) => {
      const carriesApi = decision.role !== 'Event';
      const channel = carriesApi ? new WsActionChannel(ws, this.timeoutMs) : undefined;
      this.feed.attach(ws, 'ws_reverse', `${peer} self_id=${selfId} role=${decision.role}`, {
        selfId,
        ...(channel && { channel }),
      });
      if (channel && selfId !== 'unknown') {
        const withdraw = this.relay.register(selfId, channel);
        ws.once('close', withdraw);
      }
    });
  }

  beforeApplicationShutdown(): void {
    // Upgraded sockets keep the HTTP server from closing, and a close handshake can wait on a dead peer for 30 s;
    // implementations reconnect on their own, so drop the connections outright.
    for (const client of this.server.clients) client.terminate();
    this.server.close();
  }
}
