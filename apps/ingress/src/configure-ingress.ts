import type { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import { OneBotHttpEndpoint } from './onebot/onebot-http.endpoint.js';
import { OneBotReverseWsGateway } from './onebot/onebot-reverse-ws.gateway.js';

/**
 * What must sit on the app's HTTP server beside Nest's router: the OneBot HTTP POST endpoint, which takes its
 * route before Express sees the request (docs/adr/0021), and the reverse WebSocket's upgrade handler. Called by
 * `main.ts` and by the medium tests.
 */
export function configureIngress(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  app.get(OneBotHttpEndpoint).attach(server);
  app.get(OneBotReverseWsGateway).attach(server);
}
