import type { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { QunliConfig } from '@app/platform';
import { IngressMetrics } from './onebot/ingress.metrics.js';
import { ONEBOT_HTTP_PATH } from './onebot/onebot-http.controller.js';
import { accessTokenGate, bodyErrorHandler } from './onebot/onebot-http.middleware.js';
import { OneBotReverseWsGateway } from './onebot/onebot-reverse-ws.gateway.js';
import { MAX_INPUT_BYTES } from './onebot/onebot-socket.feed.js';

/**
 * HTTP plumbing that must sit in front of Nest's router, in this order: the access-token gate (before the body is
 * read), the JSON body parser with its 1 MiB limit, and the handler that turns parser failures into OneBot errors.
 * Then the reverse WebSocket joins the same HTTP server. Called by `main.ts` and by the medium tests.
 */
export function configureIngress(app: INestApplication): void {
  const express = app as NestExpressApplication;
  const config = app.get(QunliConfig);
  const metrics = app.get(IngressMetrics);
  express.use(ONEBOT_HTTP_PATH, accessTokenGate(config.ONEBOT_ACCESS_TOKEN, metrics));
  express.useBodyParser('json', { limit: MAX_INPUT_BYTES });
  express.use(ONEBOT_HTTP_PATH, bodyErrorHandler(metrics, MAX_INPUT_BYTES));
  app.get(OneBotReverseWsGateway).attach(app.getHttpServer() as Server);
}
