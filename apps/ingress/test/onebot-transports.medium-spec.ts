import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { EventKind, type EventEnvelope, type MessagePayload } from '@app/contracts';
import { OneBotRelayApi, signBody } from '@app/onebot';
import { Metrics } from '@app/platform';
import {
  FakeOneBot,
  napcatGroupMessage,
  napcatHeartbeat,
  napcatMessageSent,
  nextMessageId,
  type ReverseConnection,
} from '@app/testing';
import { IngressHarness } from './ingress.harness.js';

const SELF_ID = '10001';
const TOKEN = 'napcat-token';
const SECRET = 'napcat-secret';

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const payloadOf = (event: EventEnvelope | undefined) => event?.payload as MessagePayload;

describe('ingress against a NapCat-like peer, every transport (real Redis)', () => {
  let ingress: IngressHarness;
  let fake: FakeOneBot;
  const connections: ReverseConnection[] = [];

  async function start(env: Record<string, string> = {}, peer: ConstructorParameters<typeof FakeOneBot>[0] = {}) {
    fake = new FakeOneBot({ selfId: SELF_ID, accessToken: TOKEN, secret: SECRET, ...peer });
    await fake.start();
    ingress = await IngressHarness.start({
      ONEBOT_ACCESS_TOKEN: TOKEN,
      ONEBOT_SECRET: SECRET,
      QUNLI_ONEBOT_TIMEOUT_MS: '1500',
      ...env,
    });
  }

  const kinds = async (groupId: string) => (await ingress.events(groupId)).map((e) => e.kind);

  afterEach(async () => {
    for (const c of connections.splice(0)) await c.close().catch(() => undefined);
    await ingress?.stop();
    await fake?.stop();
  });

  it('HTTP POST: the HMAC is checked over the raw body (NapCat escapes differ from re-serialised JSON)', async () => {
    await start({}, { asciiJson: true });
    const result = await fake.postGroupMessage({
      ingressUrl: `${ingress.baseUrl}/onebot/v11/http`,
      groupId: '30001',
      userId: '20001',
      nickname: '小明',
      text: '你好，世界',
    });
    expect(result.status).toBe(204);
    expect(payloadOf((await ingress.events('30001'))[0]).text).toBe('你好，世界');
  });

  it('refuses a wrong token, a missing signature and a signature over an altered body', async () => {
    await start();
    const event = napcatGroupMessage({ selfId: SELF_ID, groupId: '30002', userId: '20001', nickname: 'a', text: 'x' });
    const body = JSON.stringify(event);
    const post = (headers: Record<string, string>, raw = body) =>
      fetch(`${ingress.baseUrl}/onebot/v11/http`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: raw,
      });
    expect((await post({ authorization: 'Bearer wrong', 'x-signature': signBody(SECRET, body) })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${TOKEN}` })).status).toBe(401);
    const altered = body.replace('"x"', '"y"');
    const refused = await post({ authorization: `Bearer ${TOKEN}`, 'x-signature': signBody(SECRET, body) }, altered);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('ONEBOT.BAD_SIGNATURE');
    const mismatch = await post({
      authorization: `Bearer ${TOKEN}`,
      'x-signature': signBody(SECRET, body),
      'x-self-id': '10009',
    });
    expect(mismatch.status).toBe(400);
    expect(((await mismatch.json()) as { error: { field: string } }).error.field).toBe('self_id');
    expect(await ingress.totalEvents()).toBe(0);
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'bad_signature' })).toBe(1);
  });

  it('reverse WS: NapCat’s empty `Bearer ` is no token (the query token counts), a wrong role is refused', async () => {
    await start();
    const url = `${ingress.wsUrl}/onebot/v11/ws`;
    await expect(fake.connectReverse(url, { token: '' })).rejects.toThrow(/HTTP 401/);
    // Empty Bearer header and the token in the query, as NapCat writes it when the token is in the URL.
    const viaQuery = new WebSocket(`${url}?access_token=${TOKEN}`, {
      headers: { Authorization: 'Bearer ', 'X-Self-ID': SELF_ID },
    });
    await new Promise<void>((resolve, reject) => {
      viaQuery.once('open', () => resolve());
      viaQuery.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    viaQuery.close();
    await expect(fake.connectReverse(url, { role: 'Observer' })).rejects.toThrow(/HTTP 400/);
    await expect(fake.connectReverse(`${url}/api`, { role: 'Event' })).rejects.toThrow(/HTTP 400/);
    connections.push(await fake.connectReverse(`${url}/event`, { role: 'Event' }));
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'bad_role' })).toBe(2);
  });

  it('reverse WS: several accounts at once, keyed by self_id; events, connection health, error frames', async () => {
    await start();
    const url = `${ingress.wsUrl}/onebot/v11/ws`;
    connections.push(await fake.connectReverse(url));
    const second = new FakeOneBot({ selfId: '10002', accessToken: TOKEN });
    await second.start();
    try {
      connections.push(await second.connectReverse(url));
      fake.emit(
        napcatGroupMessage({ selfId: SELF_ID, groupId: '30003', userId: '20001', nickname: 'a', text: '一号机' }),
      );
      second.emit(
        napcatGroupMessage({ selfId: '10002', groupId: '30003', userId: '20001', nickname: 'a', text: '二号机' }),
      );
      const events = await until('both accounts’ messages', async () => {
        const found = await ingress.events('30003');
        return found.length >= 2 ? found : undefined;
      });
      expect(events.map((e) => payloadOf(e).selfId).sort()).toEqual(['10001', '10002']);
      expect(await ingress.metric('qunli_onebot_connections', { transport: 'ws_reverse', self_id: '10002' })).toBe(1);
      const health = (await (await fetch(`${ingress.baseUrl}/health`)).json()) as {
        details: { onebot: { accounts: { selfId: string }[] } };
      };
      expect(health.details.onebot.accounts.map((a) => a.selfId).sort()).toEqual(['10001', '10002']);
      // A bad frame is answered with an error frame naming the field and kept in the dead-letter stream.
      fake.emit({
        ...napcatGroupMessage({ selfId: SELF_ID, groupId: '30003', userId: '20001', nickname: 'a', text: 'z' }),
        group_id: 'abc',
      });
      const frame = await until('the error frame', () =>
        fake.otherFrames.find((f) => typeof f === 'object' && f !== null && 'error' in f),
      );
      expect(frame).toMatchObject({
        error: { code: 'ONEBOT.INVALID_PAYLOAD', field: 'group_id', reason: 'invalid_payload' },
      });
      const dead = await until('the dead letter', async () => {
        const entries = await ingress.redis.xrange(ingress.keys.ingressDeadLetters, '-', '+');
        return entries.length > 0 ? entries : undefined;
      });
      expect(dead[0]![1]).toEqual(expect.arrayContaining(['field', 'group_id', 'transport', 'ws_reverse']));
      expect(dead[0]![1][dead[0]![1].indexOf('raw') + 1]).toContain('"group_id":"abc"');
    } finally {
      await second.stop();
    }
  });

  it('forward WS: reads the events, and the heartbeat watchdog drops a silent connection and reconnects', async () => {
    fake = new FakeOneBot({ selfId: SELF_ID, accessToken: TOKEN, heartbeatMs: 150 });
    await fake.start();
    ingress = await IngressHarness.start({ ONEBOT_ACCESS_TOKEN: TOKEN, ONEBOT_WS_URL: fake.wsUrl });
    await until('the connection', () => (fake.connections === 1 ? true : undefined));
    await sleep(400); // a heartbeat or two announce the interval
    fake.emit(napcatGroupMessage({ selfId: SELF_ID, groupId: '30004', userId: '20001', nickname: 'a', text: '正向' }));
    await until('the event', async () => ((await ingress.events('30004')).length === 1 ? true : undefined));
    expect(fake.connectionsOpened).toBe(1);
    fake.silence();
    // No frame for 2 × 150 ms + 1 s: the watchdog terminates the link and the client connects again.
    await until(
      'a reconnect after the watchdog',
      () => (fake.connectionsOpened === 2 && fake.connections === 1 ? true : undefined),
      15_000,
    );
    fake.emit(
      napcatGroupMessage({ selfId: SELF_ID, groupId: '30004', userId: '20001', nickname: 'a', text: '又连上了' }),
    );
    await until('the event after the reconnect', async () =>
      (await ingress.events('30004')).length === 2 ? true : undefined,
    );
  }, 30_000);

  it('forward WS: a heartbeat whose interval is junk leaves the link up', async () => {
    fake = new FakeOneBot({ selfId: SELF_ID, accessToken: TOKEN });
    await fake.start();
    ingress = await IngressHarness.start({ ONEBOT_ACCESS_TOKEN: TOKEN, ONEBOT_WS_URL: fake.wsUrl });
    await until('the connection', () => (fake.connections === 1 ? true : undefined));
    // 2^60 ms does not fit a Node timer: armed with it, the watchdog would fire after 1 ms and drop the link.
    fake.emit({ ...napcatHeartbeat(SELF_ID, 30_000), interval: 2 ** 60 });
    await sleep(500);
    fake.emit(napcatGroupMessage({ selfId: SELF_ID, groupId: '30008', userId: '20001', nickname: 'a', text: '还在' }));
    await until('the event', async () => ((await ingress.events('30008')).length === 1 ? true : undefined));
    expect(fake.connectionsOpened).toBe(1);
  }, 30_000);

  it('the same message over HTTP POST and a WebSocket is one event', async () => {
    await start();
    connections.push(await fake.connectReverse(`${ingress.wsUrl}/onebot/v11/ws`));
    const event = napcatGroupMessage({
      selfId: SELF_ID,
      groupId: '30005',
      userId: '20001',
      nickname: 'a',
      text: '两条路',
    });
    fake.emit(event);
    expect((await fake.postEvent(`${ingress.baseUrl}/onebot/v11/http`, event)).status).toBe(204);
    fake.emit(event);
    await sleep(300);
    expect(await kinds('30005')).toEqual([EventKind.MessageObserved]);
    expect(await ingress.metric('qunli_ingress_duplicates_total')).toBe(2);
  });

  it('a quote of the bot’s message is direct (reply), also after ingress restarts', async () => {
    await start({ QUNLI_SELF_ID: SELF_ID });
    const ingressUrl = `${ingress.baseUrl}/onebot/v11/http`;
    const botMessage = nextMessageId();
    const echo = napcatMessageSent({
      selfId: SELF_ID,
      nickname: '小满',
      messageType: 'group',
      targetId: '30006',
      messageId: botMessage,
      segments: [{ type: 'text', data: { text: '我是小满' } }],
    });
    expect((await fake.postEvent(ingressUrl, echo)).status).toBe(204);
    const prefix = ingress.keys.prefix;
    await ingress.stop(true);
    ingress = await IngressHarness.start(
      { ONEBOT_ACCESS_TOKEN: TOKEN, ONEBOT_SECRET: SECRET, QUNLI_SELF_ID: SELF_ID },
      prefix,
    );
    // A quote without the automatic @ (the user deleted it): only the sent-ids store knows it is the bot's.
    const quote = napcatGroupMessage({
      selfId: SELF_ID,
      groupId: '30006',
      userId: '20001',
      nickname: 'a',
      text: '真的吗',
      replyTo: String(botMessage),
    });
    expect((await fake.postEvent(`${ingress.baseUrl}/onebot/v11/http`, quote)).status).toBe(204);
    const events = await ingress.events('30006');
    expect(events.map((e) => e.kind)).toEqual([EventKind.MessageEchoed, EventKind.MessageDirect]);
    expect(payloadOf(events[1])).toMatchObject({ directReason: 'reply', mentionsSelf: false });
    const other = napcatGroupMessage({
      selfId: SELF_ID,
      groupId: '30006',
      userId: '20001',
      nickname: 'a',
      text: '+1',
      replyTo: '999',
    });
    await fake.postEvent(`${ingress.baseUrl}/onebot/v11/http`, other);
    expect((await ingress.events('30006')).at(-1)!.kind).toBe(EventKind.MessageObserved);
  });

  it('an echo of a message outbound already recorded is not recorded twice', async () => {
    await start({ QUNLI_SELF_ID: SELF_ID });
    const id = nextMessageId();
    await ingress.redis.zadd(ingress.keys.sentMessages(ingress.keys.partitionOf('30008')), Date.now(), `30008:${id}`);
    const echo = napcatMessageSent({
      selfId: SELF_ID,
      nickname: '小满',
      messageType: 'group',
      targetId: '30008',
      messageId: id,
      segments: [{ type: 'text', data: { text: '已发' } }],
    });
    expect((await fake.postEvent(`${ingress.baseUrl}/onebot/v11/http`, echo)).status).toBe(204);
    expect(await ingress.events('30008')).toEqual([]);
    expect(await ingress.metric('qunli_ingress_ignored_total', { reason: 'self' })).toBe(1);
  });

  it('relays outbound’s calls over the reverse WS: delivered; unreachable without a connection; unknown when the link drops mid-call', async () => {
    await start();
    const relay = new OneBotRelayApi({
      redis: ingress.redis,
      keys: ingress.keys,
      selfId: SELF_ID,
      timeoutMs: 1500,
      metrics: new Metrics('relay', false),
    });
    try {
      expect(await relay.call('send_group_msg', { group_id: 30007, message: 'x' })).toMatchObject({
        kind: 'unreachable',
        code: 'ONEBOT.NOT_CONNECTED',
      });
      const connection = await fake.connectReverse(`${ingress.wsUrl}/onebot/v11/ws`);
      connections.push(connection);
      await until('relay presence', async () =>
        (await ingress.redis.exists(ingress.keys.relayPresence(SELF_ID))) === 1 ? true : undefined,
      );
      const ok = await relay.call<{ message_id: number }>('send_group_msg', {
        group_id: 30007,
        message: [{ type: 'text', data: { text: '经由反向连接' } }],
      });
      expect(ok).toMatchObject({ kind: 'ok', data: { message_id: fake.sentMessages[0]!.messageId } });
      expect(fake.calls[0]!.transport).toBe('ws');
      fake.script({ kind: 'drop', delivered: true });
      const pending = relay.call('send_group_msg', { group_id: 30007, message: 'lost' });
      await until('the call to arrive', () => (fake.calls.length >= 2 ? true : undefined));
      await connection.close();
      expect(await pending).toMatchObject({ kind: 'unknown', code: 'ONEBOT.CONNECTION_LOST' });
    } finally {
      await relay.close();
    }
  }, 30_000);
});
