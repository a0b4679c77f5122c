import { Controller, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { ConsumerGroup, EventKind, Keyspace, makeEvent, newEventId, type EventOf } from '@app/contracts';
import { EventBusModule, EventLog, type StreamContext } from '@app/event-bus';
import { PlatformModule } from '@app/platform';
import { deleteKeys, testConfig, testRedis, uniquePrefix } from '@app/testing';
import { configureOutbound } from './configure-outbound.js';

const GROUP = '30001';
const OUTAGE_DELIVERIES = 5;
const seen: number[] = [];

/** Fails like a handler whose Redis connection dropped, for more deliveries than QUNLI_MAX_DELIVERIES. */
@Controller()
class FlakyRedisConsumer {
  @EventPattern<string>(EventKind.ActionSend)
  onActionSend(@Payload() _event: EventOf<'action.send'>, @Ctx() ctx: StreamContext): void {
    seen.push(ctx.deliveries);
    if (seen.length <= OUTAGE_DELIVERIES) throw new Error('Connection is closed.');
  }
}

describe("outbound's stream consumer wiring (real Redis)", () => {
  let redis: Redis;
  let prefix: string;
  let app: INestApplication | undefined;

  beforeEach(() => {
    prefix = uniquePrefix('obwire');
    redis = testRedis();
    seen.length = 0;
  });

  afterEach(async () => {
    await app?.close();
    await deleteKeys(redis, prefix);
    await redis.quit();
  });

  it('treats a handler’s transient Redis error as an outage: retried, never dead-lettered', async () => {
    const config = testConfig('outbound', {
      QUNLI_REDIS_PREFIX: prefix,
      QUNLI_PARTITIONS: 2,
      QUNLI_MAX_DELIVERIES: 3,
      QUNLI_CLAIM_IDLE_MS: 200,
      QUNLI_LEASE_MS: 1500,
      ONEBOT_HTTP_API_URL: 'http://127.0.0.1:9',
    });
    @Module({
      imports: [PlatformModule.forApp('outbound', { config, withoutDefaultMetrics: true }), EventBusModule.forRoot()],
      controllers: [FlakyRedisConsumer],
    })
    class WiringModule {}
    app = await NestFactory.create(WiringModule, { logger: false });
    configureOutbound(app);
    await app.startAllMicroservices();
    await app.init();

    const episodeId = `ep_${newEventId()}`;
    const action = makeEvent({
      kind: EventKind.ActionSend,
      groupId: GROUP,
      source: 'test',
      payload: {
        actionId: `act_${episodeId}_0`,
        episodeId,
        triggerEventId: newEventId(),
        targetType: 'group',
        targetId: GROUP,
        text: '在的',
      },
    });
    await app.get(EventLog).append(action);

    const keys = new Keyspace(prefix, 2);
    const deadline = Date.now() + 30_000;
    while (seen.length <= OUTAGE_DELIVERIES && Date.now() < deadline) await sleep(50);
    expect(seen.length).toBeGreaterThan(OUTAGE_DELIVERIES);
    expect(await redis.xlen(keys.deadLetters(keys.partitionOf(GROUP)))).toBe(0);
    const pending = (await redis.xpending(keys.stream(keys.partitionOf(GROUP)), ConsumerGroup.Outbound)) as [number];
    expect(pending[0]).toBe(0);
  }, 60_000);
});
