import { Module } from '@nestjs/common';
import { IngressDeadLetters } from './ingress-dead-letters.store.js';
import { IngressMetrics } from './ingress.metrics.js';
import { OneBotActionRelay } from './onebot-action.relay.js';
import { OneBotConnections } from './onebot-connections.js';
import { OneBotForwardWsClient } from './onebot-forward-ws.client.js';
import { OneBotHttpEndpoint } from './onebot-http.endpoint.js';
import { OneBotIntake } from './onebot-intake.service.js';
import { OneBotReverseWsGateway } from './onebot-reverse-ws.gateway.js';
import { OneBotSocketFeed } from './onebot-socket.feed.js';
import { SentMessageIds } from './sent-message-ids.store.js';

/**
 * OneBot v11 in (HTTP POST, reverse and forward WebSocket) → events out; the reverse WebSocket also relays
 * outbound's actions. Needs Platform, EventBus and the persona (its names are the default nicknames).
 */
@Module({
  providers: [
    IngressMetrics,
    OneBotConnections,
    IngressDeadLetters,
    SentMessageIds,
    OneBotIntake,
    OneBotHttpEndpoint,
    OneBotSocketFeed,
    OneBotActionRelay,
    OneBotReverseWsGateway,
    OneBotForwardWsClient,
  ],
  exports: [IngressMetrics, OneBotIntake, OneBotConnections, OneBotReverseWsGateway, OneBotHttpEndpoint],
})
export class OneBotIntakeModule {}
