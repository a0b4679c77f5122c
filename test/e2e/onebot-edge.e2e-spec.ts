import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { EventKind, Keyspace, type EventEnvelope } from '@app/contracts';
import {
  AppProcess,
  assertBuilt,
  createTestDatabase,
  deleteKeys,
  FakeOneBot,
  freePort,
  LlmDouble,
  napcatGroupMessage,
  napcatPoke,
  napcatPrivateMessage,
  napcatRecall,
  PORT_SETTING,
  REPO_ROOT,
  testRedis,
  uniquePrefix,
  answeredText,
  type AppUnderTest,
  type ReverseConnection,
  type TestDatabase,
} from '@app/testing';

const APPS: AppUnderTest[] = ['ingress', 'scheduler', 'cognition', 'outbound', 'life-director'];
const SELF_ID = '10001';
const TOKEN = 'edge-token';
const PARTITIONS = 4;

const running = new Map<AppUnderTest, AppProcess>();

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const logs = [...running.values()].map((app) => `--- ${app.app} (${app.logFile})\n${app.tail(20)}`);
      throw new Error(`timed out waiting for ${what}\n${logs.join('\n')}`);
    }
    await sleep(100);
  }
}

/**
 * The OneBot edge end to end (issue 5): the implementation reaches qunli only over a reverse WebSocket to ingress
 * (no HTTP API configured), so outbound sends over that connection through the relay. Every trigger the issue adds
 * is answered through it; a recalled message is not; a reply split into parts survives outbound being killed.
 */
describe('OneBot edge: five apps, a NapCat peer on a reverse WebSocket only', () => {
  let db: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let llm: LlmDouble;
  let onebot: FakeOneBot;
  let connection: ReverseConnection;
  const apps = running;

  const sendsTo = (group: string) => onebot.sentMessages.filter((m) => m.groupId === group);

  async function events(groupId: string): Promise<EventEnvelope[]> {
    const keys = new Keyspace(prefix, PARTITIONS);
    const entries = await redis.xrange(keys.stream(keys.partitionOf(groupId)), '-', '+');
    return entries
      .map(([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope)
      .filter((e) => e.groupId === groupId);
  }

  async function connect(): Promise<void> {
    connection = await onebot.connectReverse(`ws://127.0.0.1:${apps.get('ingress')!.port}/onebot/v11/ws`);
    const keys = new Keyspace(prefix, PARTITIONS);
    await until('the relay to announce the connection', async () =>
      (await redis.exists(keys.relayPresence(SELF_ID))) === 1 ? true : undefined,
    );
  }

  beforeAll(async () => {
    assertBuilt(APPS);
    db = await createTestDatabase('e2e-edge');
    prefix = uniquePrefix('e2e-edge');
    redis = testRedis();
    llm = await LlmDouble.start({
      replyText: (body) =>
        answeredText(body).includes('分三条') ? '第一条\n第二条\n第三条' : `好呀：${answeredText(body).slice(0, 20)}`,
    });
    onebot = new FakeOneBot({ accessToken: TOKEN, selfId: SELF_ID, nickname: '林小满' });
    await onebot.start();
    const logDir = join(tmpdir(), `qunli-e2e-${prefix}`);
    const ports = new Map<AppUnderTest, number>();
    for (const app of APPS) ports.set(app, await freePort());
    const common: Record<string, string> = {
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      DATABASE_URL: db.url,
      QUNLI_REDIS_PREFIX: prefix,
      QUNLI_PARTITIONS: String(PARTITIONS),
      QUNLI_SELF_ID: SELF_ID,
      ONEBOT_ACCESS_TOKEN: TOKEN,
      OPENAI_BASE_URL: llm.baseUrl,
      OPENAI_API_KEY: 'e2e-key',
      QUNLI_HTTP_HOST: '127.0.0.1',
      QUNLI_LEASE_MS: '2000',
      QUNLI_CLAIM_IDLE_MS: '3000',
      QUNLI_ONEBOT_TIMEOUT_MS: '3000',
      QUNLI_SEND_RETRY_BASE_MS: '100',
      QUNLI_SEND_COOLDOWN_SECONDS: '0.5',
      QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
      ...Object.fromEntries(APPS.map((app) => [PORT_SETTING[app], String(ports.get(app))])),
    };
    for (const app of APPS) {
      apps.set(app, new AppProcess(app, { ...common, QUNLI_INSTANCE_ID: `${app}-edge` }, ports.get(app)!, logDir));
    }
    try {
      await Promise.all([...apps.values()].map((app) => app.start()));
      await connect();
    } catch (error) {
      for (const app of apps.values()) process.stderr.write(`--- ${app.app}\n${app.tail(30)}\n`);
      throw error;
    }
  }, 120_000);

  afterAll(async () => {
    await connection?.close().catch(() => undefined);
    await Promise.all([...apps.values()].map((app) => app.stop()));
    await onebot?.stop();
    await llm?.close();
    await db?.drop();
    if (redis) {
      await deleteKeys(redis, prefix);
      await redis.quit();
    }
  }, 60_000);

  it('answers an @ over the reverse WebSocket, sending through the same connection (no HTTP API)', async () => {
    onebot.emit(
      napcatGroupMessage({
        selfId: SELF_ID,
        groupId: '30101',
        userId: '20001',
        nickname: 'Alice',
        text: '在吗',
        atSelf: true,
      }),
    );
    await until('the reply', () => (sendsTo('30101').length > 0 ? true : undefined));
    expect(sendsTo('30101')[0]!.text).toMatch(/^好呀：.*在吗/);
    expect(onebot.calls.find((c) => c.action === 'send_group_msg')!.transport).toBe('ws');
    const sent = await until('message.sent', async () =>
      (await events('30101')).find((e) => e.kind === EventKind.MessageSent),
    );
    expect((sent.payload as { onebotMessageId: string }).onebotMessageId).toBe(String(sendsTo('30101')[0]!.messageId));
  }, 60_000);

  it('answers its persona’s name, a quote of its message, a poke and a private chat', async () => {
    onebot.emit(
      napcatGroupMessage({ selfId: SELF_ID, groupId: '30102', userId: '20002', nickname: 'Bob', text: '小满你在吗' }),
    );
    await until('the answer to its name', () => (sendsTo('30102').length === 1 ? true : undefined));
    const botMessage = sendsTo('30102')[0]!.messageId;
    // A person quotes a message once QQ shows it; the bot knows it as its own from `message.sent` on.
    await until('message.sent of the answer', async () =>
      (await events('30102')).find((e) => e.kind === EventKind.MessageSent),
    );
    onebot.emit(
      napcatGroupMessage({
        selfId: SELF_ID,
        groupId: '30102',
        userId: '20003',
        nickname: 'Carol',
        text: '真的假的',
        replyTo: String(botMessage),
      }),
    );
    await until('the answer to the quote', () => (sendsTo('30102').length === 2 ? true : undefined));
    onebot.emit(napcatPoke({ selfId: SELF_ID, groupId: '30102', userId: '20004', targetId: SELF_ID }));
    await until('the answer to the poke', () => (sendsTo('30102').length === 3 ? true : undefined));
    onebot.emit(napcatPrivateMessage({ selfId: SELF_ID, userId: '20005', nickname: 'Dave', text: '私聊你一下' }));
    await until('the private answer', () => (onebot.sentMessages.some((m) => m.userId === '20005') ? true : undefined));
    const reasons = (await events('30102'))
      .filter((e) => e.kind === EventKind.MessageDirect)
      .map((e) => (e.payload as { directReason: string }).directReason);
    expect(reasons).toEqual(['name', 'reply', 'poke']);
    // The bot's quoted message is not answered by the quote's automatic @: one answer per trigger.
    await sleep(1000);
    expect(sendsTo('30102')).toHaveLength(3);
  }, 90_000);

  it('does not answer a message recalled while the bot is still thinking', async () => {
    llm.latencyMs = 4000;
    try {
      const before = llm.completionRequests.length;
      const message = napcatGroupMessage({
        selfId: SELF_ID,
        groupId: '30103',
        userId: '20006',
        nickname: 'Eve',
        text: '发错了',
        atSelf: true,
      });
      onebot.emit(message);
      await until('the bot to start thinking', () => (llm.completionRequests.length > before ? true : undefined));
      onebot.emit(
        napcatRecall({ selfId: SELF_ID, groupId: '30103', userId: '20006', messageId: message.message_id as number }),
      );
      const recalled = await until('the recall in the log', async () =>
        (await events('30103')).find((e) => e.kind === EventKind.MessageRecalled),
      );
      const trigger = (await events('30103')).find((e) => e.kind === EventKind.MessageDirect)!;
      expect((recalled.payload as { eventId?: string }).eventId).toBe(trigger.id);
      await sleep(7000);
      expect(sendsTo('30103')).toHaveLength(0);
      // The scheduler cancelled the episode and cognition stopped it: nothing more is spent on a withdrawn message.
      const log = await events('30103');
      const commands = log
        .filter((e) => e.kind === EventKind.EpisodeControl)
        .map((e) => (e.payload as { command: string }).command);
      expect(commands).toContain('cancel');
      const completed = log.find((e) => e.kind === EventKind.EpisodeCompleted);
      expect((completed?.payload as { outcome?: string } | undefined)?.outcome).toBe('cancelled');
      expect(log.some((e) => e.kind === EventKind.ActionSend)).toBe(false);
    } finally {
      llm.latencyMs = 0;
    }
  }, 60_000);

  it('after a SIGKILL of outbound in the middle of a split reply, no part is sent twice and none is missing', async () => {
    const outbound = apps.get('outbound')!;
    onebot.holdSends();
    onebot.emit(
      napcatGroupMessage({
        selfId: SELF_ID,
        groupId: '30104',
        userId: '20007',
        nickname: 'Frank',
        text: '请分三条回答',
        atSelf: true,
      }),
    );
    await until('the first part at the implementation', () => (onebot.heldSends > 0 ? true : undefined));
    await outbound.kill('SIGKILL');
    onebot.releaseSends();
    await outbound.start();
    await until('all three parts', () => (sendsTo('30104').length >= 3 ? true : undefined), 60_000);
    await sleep(2000);
    expect(sendsTo('30104').map((m) => m.text)).toEqual(['第一条', '第二条', '第三条']);
    const sent = (await events('30104')).filter((e) => e.kind === EventKind.MessageSent);
    expect(sent.map((e) => (e.payload as { segmentIndex: number }).segmentIndex)).toEqual([0, 1, 2]);
    expect((sent[0]!.payload as { verified?: boolean }).verified).toBe(true);
  }, 120_000);
});
