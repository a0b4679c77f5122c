import type { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { QunliConfig } from '@app/platform';
import { ONEBOT_HTTP_PATH } from './onebot/onebot-http.controller.js';
import { accessTokenGate, bodyErrorHandler } from './onebot/onebot-http.middleware.js';
import { OneBotReverseWsGateway } from './onebot/onebot-reverse-ws.gateway.js';
import { OneBotIntake } from './onebot/onebot-intake.service.js';

/**
 * HTTP plumbing that must sit in front of Nest's router, in this order: the access-token gate (before the body is
 * read), the JSON body parser with its `QUNLI_INGRESS_MAX_BYTES` limit, and the handler that turns parser failures
 * into OneBot errors.
 * Then the reverse WebSocket joins the same HTTP server. Called by `main.ts` and by the medium tests.
 */
export function configureIngress(app: INestApplication): void {
  const express = app as NestExpressApplication;
  const config = app.get(QunliConfig);
  const intake = app.get(OneBotIntake);
  express.use(ONEBOT_HTTP_PATH, accessTokenGate(config.ONEBOT_ACCESS_TOKEN, intake));
  express.useBodyParser('json', { limit: config.QUNLI_INGRESS_MAX_BYTES });
  express.use(ONEBOT_HTTP_PATH, bodyErrorHandler(intake, config.QUNLI_INGRESS_MAX_BYTES));
  app.get(OneBotReverseWsGateway).attach(app.getHttpServer() as Server);
}
