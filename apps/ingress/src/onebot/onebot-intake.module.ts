import { Module } from '@nestjs/common';
import { IngressMetrics } from './ingress.metrics.js';
import { OneBotForwardWsClient } from './onebot-forward-ws.client.js';
import { OneBotHttpController } from './onebot-http.controller.js';
import { OneBotIntake } from './onebot-intake.service.js';
import { OneBotReverseWsGateway } from './onebot-reverse-ws.gateway.js';
import { OneBotSocketFeed } from './onebot-socket.feed.js';

/** OneBot v11 in (HTTP POST, reverse and forward WebSocket), message events out. Needs Platform and EventBus. */
@Module({
  controllers: [OneBotHttpController],
  providers: [IngressMetrics, OneBotIntake, OneBotSocketFeed, OneBotReverseWsGateway, OneBotForwardWsClient],
  exports: [IngressMetrics, OneBotReverseWsGateway],
})
export class OneBotIntakeModule {}
