import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import {
  actionIdFor,
  ConsumerGroup,
  episodeIdFor,
  EventKind,
  Keyspace,
  makeEvent,
  newEventId,
  sentMessageMember,
  type EventEnvelope,
  type EventOf,
} from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { Metrics } from '@app/platform';
import {
  createTestDatabase,
  deleteKeys,
  FakeOneBot,
  LlmDouble,
  testConfig,
  testRedis,
  uniquePrefix,
  type TestDatabase,
} from '@app/testing';
import { configureOutbound } from '../src/configure-outbound.js';
import { OutboundModule } from '../src/outbound.module.js';

const SELF_ID = '10001';
const PARTITIONS = 4;

/** One outbound app in this process, wired like main.ts, against a NapCat-like peer. */
class OutboundHarness {
  app!: INestApplication;
  constructor(
    readonly prefix: string,
    private readonly env: Record<string, string | number>,
  ) {}

  async start(): Promise<void> {
    const config = testConfig('outbound', { ...this.env, QUNLI_REDIS_PREFIX: this.prefix });
    this.app = await NestFactory.create(OutboundModule.forRoot({ config, withoutDefaultMetrics: true }), {
      logger: false,
    });
    configureOutbound(this.app);
    await this.app.startAllMicroservices();
    await this.app.init();
  }

  async stop(): Promise<void> {
    await this.app?.close();
  }
}

function action(
  groupId: string,
  text: string,
  extra: {
    quoteMessageId?: string;
    trigger?: string;
    targetType?: 'group' | 'private';
    targetId?: string;
    segments?: { type: string; data: Record<string, string> }[];
  } = {},
): EventOf<'action.send'> {
  const triggerEventId = extra.trigger ?? newEventId();
  const episodeId = episodeIdFor(triggerEventId);
  const targetType = extra.targetType ?? 'group';
  return makeEvent({
    kind: EventKind.ActionSend,
    groupId,
    source: 'cognition',
    payload: {
      actionId: actionIdFor(episodeId, 0),
      episodeId,
      triggerEventId,
      targetType,
      targetId: extra.targetId ?? groupId,
      text,
      ...(extra.quoteMessageId !== undefined && { quoteMessageId: extra.quoteMessageId }),
      ...(extra.segments !== undefined && { segments: extra.segments }),
    },
  });
}

describe('outbound (real Redis + Postgres, NapCat-like peer over HTTP)', () => {
  let db: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let keys: Keyspace;
  let fake: FakeOneBot;
  let outbound: OutboundHarness | undefined;
  let log: EventLog;

  async function start(
    env: Record<string, string | number> = {},
    peer: ConstructorParameters<typeof FakeOneBot>[0] = {},
  ) {
    fake = new FakeOneBot({ selfId: SELF_ID, ...peer });
    const url = await fake.start();
    outbound = new OutboundHarness(prefix, {
      DATABASE_URL: db.url,
      QUNLI_PARTITIONS: PARTITIONS,
      QUNLI_SELF_ID: SELF_ID,
      ONEBOT_HTTP_API_URL: url,
      QUNLI_ONEBOT_TIMEOUT_MS: 1500,
      QUNLI_LEASE_MS: 1500,
      QUNLI_CLAIM_IDLE_MS: 1000,
      QUNLI_SEND_RETRY_BASE_MS: 20,
      QUNLI_SEND_COOLDOWN_SECONDS: 0.2,
      QUNLI_SEND_GROUP_BURST: 100,
      QUNLI_SEND_GROUP_PER_MINUTE: 6000,
      QUNLI_SEND_GLOBAL_PER_SECOND: 1000,
      QUNLI_SEND_MAX_SEGMENT_CHARS: 40,
      QUNLI_INSTANCE_ID: 'outbound-medium',
      ...env,
    });
    await outbound.start();
    log = outbound.app.get(EventLog);
  }

  /** Every event of `kind` in the partition of `groupId`, in log order. */
  async function events<K extends EventKind>(groupId: string, kind: K): Promise<EventOf<K>[]> {
    const entries = await redis.xrange(keys.stream(keys.partitionOf(groupId)), '-', '+');
    return entries
      .map(([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope)
      .filter((e): e is EventOf<K> => e.kind === kind);
  }

  async function until<T>(
    what: string,
    probe: () => Promise<T | undefined> | T | undefined,
    timeoutMs = 20_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}; sent: ${JSON.stringify(fake.sentMessages.map((m) => m.text))}`);
      await sleep(25);
    }
  }

  const sentTo = (groupId: string) => fake.sentMessages.filter((m) => m.groupId === groupId).map((m) => m.text);

  beforeAll(async () => {
    db = await createTestDatabase('outbound');
    redis = testRedis();
  }, 60_000);

  beforeEach(() => {
    prefix = uniquePrefix('outbound');
    keys = new Keyspace(prefix, PARTITIONS);
  });

  afterEach(async () => {
    await outbound?.stop();
    outbound = undefined;
    await fake?.stop();
    await deleteKeys(redis, prefix);
  });

  afterAll(async () => {
    await redis.quit();
    await db.drop();
  });

  it('sends a reply line by line, the first quoting, each part with a message.sent carrying its OneBot id', async () => {
    await start();
    const reply = action('30001', '第一行\n第二行\n第三行', { quoteMessageId: '4242' });
    await log.append(reply);
    const sent = await until('three parts', async () => {
      const found = await events('30001', EventKind.MessageSent);
      return found.length === 3 ? found : undefined;
    });
    expect(sentTo('30001')).toEqual(['第一行', '第二行', '第三行']);
    expect(fake.sentMessages[0]!.replyTo).toBe('4242');
    expect(fake.sentMessages[1]!.replyTo).toBeUndefined();
    expect(sent.map((e) => [e.payload.segmentIndex, e.payload.segmentCount, e.payload.text])).toEqual([
      [0, 3, '第一行'],
      [1, 3, '第二行'],
      [2, 3, '第三行'],
    ]);
    expect(sent.map((e) => e.payload.onebotMessageId)).toEqual(fake.sentMessages.map((m) => String(m.messageId)));
    expect(sent.every((e) => e.causationId === reply.id && e.correlationId === reply.correlationId)).toBe(true);
    // The sent-ids store knows them, for ingress to recognise a quote of the bot.
    const member = sentMessageMember('30001', String(fake.sentMessages[1]!.messageId));
    expect(await redis.zscore(keys.sentMessages(keys.partitionOf('30001')), member)).not.toBeNull();
  }, 30_000);

  it('sends an action.send appended twice once, whether the copy comes while it is queued or after it went out', async () => {
    await start();
    const queued = action('30095', '只发一次');
    await log.append(queued);
    await log.append(queued);
    await until('the reply', () => (sentTo('30095').length > 0 ? true : undefined));
    const late = action('30096', '也只发一次');
    await log.append(late);
    await until('the second reply', () => (sentTo('30096').length > 0 ? true : undefined));
    // Its copy comes once it was delivered and left the outbox: the ledger's `done` marker holds it.
    await log.append(late);
    await until('the copy handled', async () => {
      const pending = (await redis.xpending(keys.stream(keys.partitionOf('30096')), ConsumerGroup.Outbound)) as [
        number,
      ];
      return pending[0] === 0 && (await events('30096', EventKind.ActionSend)).length === 2 ? true : undefined;
    });
    await sleep(500);
    expect(sentTo('30095')).toEqual(['只发一次']);
    expect(sentTo('30096')).toEqual(['也只发一次']);
    expect(await events('30096', EventKind.MessageSent)).toHaveLength(1);
  }, 30_000);

  it('sends a sticker (cognition’s send_emoji) as its image segment, whole, with its readable text in the log', async () => {
    await start();
    const sticker = [{ type: 'image', data: { file: 'file:///stickers/cat-nod.gif', summary: '[动画表情]' } }];
    await log.append(action('30070', '[表情：猫猫点头]', { quoteMessageId: '777', segments: sticker }));
    const sent = await until('the sticker', async () => {
      const found = await events('30070', EventKind.MessageSent);
      return found.length === 1 ? found : undefined;
    });
    const delivered = fake.sentMessages.filter((m) => m.groupId === '30070');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.replyTo).toBe('777');
    expect(delivered[0]!.segments.map((segment) => segment.type)).toEqual(['reply', 'image']);
    expect(delivered[0]!.segments[1]!.data.file).toBe('file:///stickers/cat-nod.gif');
    expect(sent[0]!.payload.text).toBe('[表情：猫猫点头]');
  }, 30_000);

  it('keeps each group’s order under concurrency and failure, groups in parallel', async () => {
    await start();
    fake.latencyMs = 15;
    // The first send of all fails twice (NapCat retcode 100: refused, nothing delivered): it is retried in place.
    fake.failNext(2, 100);
    const groups = ['30011', '30012', '30013'];
    for (let i = 0; i < 4; i++) {
      for (const group of groups) await log.append(action(group, `${group}-${i}`));
    }
    await until('every reply', () => (fake.sentMessages.length >= 12 ? true : undefined), 30_000);
    for (const group of groups) expect(sentTo(group)).toEqual([0, 1, 2, 3].map((i) => `${group}-${i}`));
    // Parallel: the group whose first send failed did not hold the others back.
    const firstOf = (g: string) => fake.sentMessages.findIndex((m) => m.groupId === g);
    const failing = fake.calls.find((c) => c.action === 'send_group_msg')!.params.group_id;
    expect(groups.some((g) => g !== String(failing) && firstOf(g) < firstOf(String(failing)))).toBe(true);
    await sleep(300);
    expect(fake.sentMessages).toHaveLength(12);
  }, 40_000);

  it('paces a group by its token bucket: a burst, then waits that are visible in metrics, nothing dropped', async () => {
    await start({ QUNLI_SEND_GROUP_BURST: 2, QUNLI_SEND_GROUP_PER_MINUTE: 300 });
    for (let i = 0; i < 4; i++) await log.append(action('30021', `慢一点${i}`));
    await until('four sends', () => (fake.sentMessages.length >= 4 ? true : undefined), 20_000);
    expect(sentTo('30021')).toEqual(['慢一点0', '慢一点1', '慢一点2', '慢一点3']);
    const metrics = await outbound!.app.get(Metrics).scrape();
    expect(metrics).toMatch(/qunli_send_wait_seconds_count\{[^}]*reason="group_budget"[^}]*\} [1-9]/);
  }, 30_000);

  it('retcode 1200 that QQ delivered anyway: cooldown, verified in history, never sent twice', async () => {
    await start();
    fake.failNext(1, 1200, { delivered: true });
    await log.append(action('30031', '风控也送到了'));
    const sent = await until('the verified part', async () => (await events('30031', EventKind.MessageSent))[0]);
    expect(sent.payload).toMatchObject({ verified: true, onebotMessageId: String(fake.sentMessages[0]!.messageId) });
    const verified = await events('30031', EventKind.SendVerified);
    expect(verified.map((v) => [v.payload.found, v.payload.method, v.payload.retcode])).toEqual([
      [true, 'group_history', 1200],
    ]);
    await sleep(300);
    expect(sentTo('30031')).toEqual(['风控也送到了']);
    expect(fake.calls.filter((c) => c.action === 'get_group_msg_history').length).toBeGreaterThanOrEqual(1);
    // The 1200 put the group into a cooldown, and the verification waited for it.
    const metrics = await outbound!.app.get(Metrics).scrape();
    expect(metrics).toMatch(/qunli_send_cooldowns_total\{[^}]*\} 1/);
    expect(metrics).toMatch(/qunli_send_wait_seconds_count\{[^}]*reason="cooldown"[^}]*\} [1-9]/);
  }, 30_000);

  it('retcode 1200 that QQ dropped, a silent drop and a lost response: verified absent or found, each sent exactly once', async () => {
    await start();
    fake.failNext(1, 1200);
    await log.append(action('30041', '被吞了'));
    await until('the resent part', async () => (await events('30041', EventKind.MessageSent))[0]);
    expect(sentTo('30041')).toEqual(['被吞了']);
    expect((await events('30041', EventKind.SendVerified))[0]!.payload.found).toBe(false);

    fake.script({ kind: 'silent' });
    await log.append(action('30042', '静默丢包'));
    await until('the silently dropped part', async () => (await events('30042', EventKind.MessageSent))[0]);
    expect(sentTo('30042')).toEqual(['静默丢包']);

    fake.script({ kind: 'drop', delivered: true });
    await log.append(action('30043', '回包丢了'));
    const found = await until(
      'the part whose response was lost',
      async () => (await events('30043', EventKind.MessageSent))[0],
    );
    expect(found.payload.verified).toBe(true);
    await sleep(300);
    expect(sentTo('30043')).toEqual(['回包丢了']);
  }, 40_000);

  it('an unknown outcome that cannot be verified ends as send.unknown, visibly, and is never resent', async () => {
    await start({}, { supportsHistory: false });
    fake.failNext(1, 1200);
    await log.append(action('30051', '无法核实'));
    const unknown = await until('send.unknown', async () => (await events('30051', EventKind.SendUnknown))[0]);
    expect(unknown.payload.error.code).toBe('SEND.UNVERIFIABLE');
    expect(unknown.payload.retcode).toBe(1200);
    await sleep(300);
    expect(fake.calls.filter((c) => c.action === 'send_group_msg')).toHaveLength(1);
  }, 30_000);

  it('folds a long reply into one forward message, and falls back to plain parts where forward is unsupported', async () => {
    const long = Array.from({ length: 8 }, (_, i) => `这是第${i}行，内容比较长一些。`).join('\n');
    await start({ QUNLI_SEND_FOLD_CHARS: 60 });
    await log.append(action('30061', long));
    await until('the forward message', () => (fake.sentMessages.length >= 1 ? true : undefined));
    expect(fake.sentMessages[0]!.action).toBe('send_group_forward_msg');
    expect(fake.sentMessages[0]!.forwardTexts).toHaveLength(8);
    const sent = await until('its message.sent', async () => (await events('30061', EventKind.MessageSent))[0]);
    expect(sent.payload.form).toBe('forward');

    fake.supportsForward = false;
    await log.append(action('30062', long));
    await until('the fallback parts', () => (sentTo('30062').length >= 5 ? true : undefined));
    expect(sentTo('30062').join('\n').split('\n')).toEqual(long.split('\n'));
  }, 30_000);

  it('drops a queued reply whose trigger was recalled while it waited, and says so', async () => {
    await start({ QUNLI_SEND_COOLDOWN_SECONDS: 3 });
    const trigger = newEventId();
    // Put the group in a cooldown so the reply waits, then recall its trigger.
    await redis.set(keys.sendCooldown(keys.partitionOf('30071'), '30071'), '1', 'PX', 1500);
    await log.append(action('30071', '别回了', { trigger }));
    await sleep(200);
    await log.append(
      makeEvent({
        kind: EventKind.MessageRecalled,
        groupId: '30071',
        source: 'ingress',
        payload: {
          messageType: 'group',
          selfId: SELF_ID,
          messageId: '5',
          userId: '20001',
          operatorId: '20001',
          recalledAt: 1,
          eventId: trigger,
        },
      }),
    );
    const dropped = await until('send.dropped', async () => (await events('30071', EventKind.SendDropped))[0], 20_000);
    expect(dropped.payload).toMatchObject({ reason: 'trigger_recalled', partsSent: 0, triggerEventId: trigger });
    await sleep(300);
    expect(sentTo('30071')).toEqual([]);
  }, 30_000);

  it('polishes a reply once through the utils model, and sends the original when the model fails', async () => {
    const llm = await LlmDouble.start();
    try {
      await start({
        QUNLI_SEND_POLISH: 'on',
        OPENAI_BASE_URL: llm.baseUrl,
        OPENAI_API_KEY: 'k',
        QUNLI_LLM_TIMEOUT_MS: 5000,
      });
      llm.nextContent('好嘞，马上来');
      await log.append(action('30091', '好的，我马上过来。'));
      await until('the polished reply', () => (sentTo('30091').length === 1 ? true : undefined));
      expect(sentTo('30091')).toEqual(['好嘞，马上来']);
      llm.failNext(5, 500);
      await log.append(action('30092', '原话照发'));
      await until('the original reply', () => (sentTo('30092').length === 1 ? true : undefined), 30_000);
      expect(sentTo('30092')).toEqual(['原话照发']);
    } finally {
      await llm.close();
    }
  }, 40_000);

  it('after a crash mid-split, a part the implementation has is not sent again and the rest is sent', async () => {
    await start();
    await outbound!.stop();
    // What a SIGKILL between the API call of part 1 and its commit leaves: part 0 sent, part 1 `sending`, part 2
    // untouched, the reply still in the outbox. The implementation did deliver part 1.
    const reply = action('30081', '一\n二\n三');
    const p = keys.partitionOf('30081');
    await new EventLog(redis, keys, new Metrics('test', false)).append(reply);
    const entryId = (await redis.xrange(keys.stream(p), '-', '+')).at(-1)![0];
    const deliveredIds: number[] = [];
    for (const text of ['一', '二']) {
      const outcome = await fetch(`${fake.url}/send_group_msg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ group_id: 30081, message: [{ type: 'text', data: { text } }] }),
      });
      deliveredIds.push(((await outcome.json()) as { data: { message_id: number } }).data.message_id);
    }
    const now = new Date().toISOString();
    const ledger = keys.sendLedger(p);
    await redis.hset(
      ledger,
      `${reply.payload.actionId}:plan`,
      JSON.stringify({ form: 'text', parts: ['一', '二', '三'], polished: false, at: now }),
    );
    await redis.hset(
      ledger,
      `${reply.payload.actionId}:0`,
      JSON.stringify({ state: 'sent', attempts: 1, onebotMessageId: String(deliveredIds[0]), at: now }),
    );
    await redis.zadd(keys.sentMessages(p), Date.now(), sentMessageMember('30081', String(deliveredIds[0])));
    await redis.hset(
      ledger,
      `${reply.payload.actionId}:1`,
      JSON.stringify({ state: 'sending', attempts: 1, calledAt: Date.now() - 1000, at: now }),
    );
    await redis.hset(
      keys.outboxItems(p),
      reply.payload.actionId,
      JSON.stringify({ event: reply, entryId, sourcePartition: p }),
    );
    await redis.zadd(keys.outbox(p, '30081'), 0, `000000000000000-0000000000|${reply.payload.actionId}`);
    await redis.sadd(keys.outboxConversations(p), '30081');

    await outbound!.start();
    log = outbound!.app.get(EventLog);
    await until('part 2', () => (sentTo('30081').length >= 3 ? true : undefined));
    await sleep(500);
    expect(sentTo('30081')).toEqual(['一', '二', '三']);
    const sent = await events('30081', EventKind.MessageSent);
    expect(sent.map((e) => [e.payload.segmentIndex, e.payload.verified ?? false])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(sent[0]!.payload.onebotMessageId).toBe(String(deliveredIds[1]));
  }, 40_000);
});
