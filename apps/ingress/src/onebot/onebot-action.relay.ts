import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import {
  parseRelayRequest,
  RELAY_ANY_ACCOUNT,
  type RelayReply,
  type WsActionChannel,
  type WsExchange,
} from '@app/onebot';
import { REDIS } from '@app/platform';

/** Presence lives this long unless renewed; renewed every third of it. Infrastructure time. */
const PRESENCE_MS = 6000;
/** Relayed calls one account's connection carries at once. */
const MAX_IN_FLIGHT = 64;

interface AccountPump {
  channels: WsActionChannel[];
  connection: Redis;
  running: Promise<void>;
  inFlight: number;
  stopped: boolean;
}

/**
 * The ingress side of the reverse-WebSocket relay (libs/onebot `relay-protocol.ts`, docs/adr/0010): while a
 * Universal or API connection of a bot account is open here, announce it (`relayPresence`), take outbound's
 * action requests for that account (and for `any`), write them on the newest open connection and publish what
 * came back. A request whose deadline passed before it was taken is never written.
 */
@Injectable()
export class OneBotActionRelay implements OnApplicationShutdown {
  private readonly logger = new Logger('OneBotActionRelay');
  private readonly pumps = new Map<string, AccountPump>();
  private readonly presence: NodeJS.Timeout;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {
    this.presence = setInterval(() => void this.announce(), PRESENCE_MS / 3);
    this.presence.unref();
  }

  /** Offer a connection's action channel for relayed calls; returns the function that withdraws it. */
  register(selfId: string, channel: WsActionChannel): () => void {
    let pump = this.pumps.get(selfId);
    if (!pump) {
      const connection = this.redis.duplicate({ connectionName: `qunli-relay-${selfId}` });
      pump = { channels: [], connection, running: Promise.resolve(), inFlight: 0, stopped: false };
      this.pumps.set(selfId, pump);
      const started = pump;
      pump.running = this.pump(selfId, started);
    }
    pump.channels.push(channel);
    void this.announce();
    const owner = pump;
    return () => {
      owner.channels = owner.channels.filter((c) => c !== channel);
      if (owner.channels.length === 0) void this.retire(selfId, owner);
    };
  }

  private async retire(selfId: string, pump: AccountPump): Promise<void> {
    if (this.pumps.get(selfId) !== pump) return;
    this.pumps.delete(selfId);
    pump.stopped = true;
    pump.connection.disconnect();
    await pump.running;
    try {
      await this.redis.del(this.keys.relayPresence(selfId));
      if (this.pumps.size === 0) await this.redis.del(this.keys.relayPresence(RELAY_ANY_ACCOUNT));
    } catch (error) {
      this.logger.warn(`could not withdraw relay presence of ${selfId}: ${(error as Error).message}`);
    }
  }

  private async announce(): Promise<void> {
    if (this.pumps.size === 0) return;
    try {
      const tx = this.redis.multi();
      for (const selfId of this.pumps.keys()) tx.set(this.keys.relayPresence(selfId), '1', 'PX', PRESENCE_MS);
      tx.set(this.keys.relayPresence(RELAY_ANY_ACCOUNT), '1', 'PX', PRESENCE_MS);
      await tx.exec();
    } catch (error) {
      this.logger.warn(`could not announce relay presence: ${(error as Error).message}`);
    }
  }

  private async pump(selfId: string, pump: AccountPump): Promise<void> {
    const lists = [this.keys.relayRequests(selfId), this.keys.relayRequests(RELAY_ANY_ACCOUNT)];
    while (!pump.stopped) {
      try {
        if (pump.inFlight >= MAX_IN_FLIGHT) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          continue;
        }
        const popped = await pump.connection.blpop(...lists, 1);
        if (!popped) continue;
        const request = parseRelayRequest(popped[1]);
        if (!request) {
          this.logger.warn(`dropped an unreadable relay request on ${popped[0]}`);
          continue;
        }
        if (Date.now() > request.deadline) {
          await this.reply({ echo: request.echo, outcome: 'not_sent', reason: 'taken after its deadline; not sent' });
          continue;
        }
        const channel = [...pump.channels].reverse().find((c) => c.open);
        if (!channel) {
          await this.reply({ echo: request.echo, outcome: 'not_sent', reason: `no open connection of ${selfId}` });
          continue;
        }
        pump.inFlight++;
        void channel
          .request(request.action, request.params, request.echo)
          .then((exchange) => this.reply(replyOf(request.echo, exchange)))
          .catch((error: unknown) => this.logger.error(`relay reply failed: ${(error as Error).message}`))
          .finally(() => pump.inFlight--);
      } catch (error) {
        if (pump.stopped) break;
        this.logger.warn(`relay pump of ${selfId}: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private async reply(reply: RelayReply): Promise<void> {
    await this.redis.publish(this.keys.relayReplies, JSON.stringify(reply));
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.presence);
    await Promise.all([...this.pumps.entries()].map(([selfId, pump]) => this.retire(selfId, pump)));
  }
}

function replyOf(echo: string, exchange: WsExchange): RelayReply {
  switch (exchange.kind) {
    case 'response':
      return { echo, outcome: 'response', frame: exchange.frame };
    case 'not_sent':
      return { echo, outcome: 'not_sent', reason: exchange.reason };
    case 'lost':
      return { echo, outcome: 'lost', reason: exchange.reason };
  }
}
