import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { WebSocket, WebSocketServer } from 'ws';
import { envelopeErrors, type EventEnvelope, type MessagePayload } from '@app/contracts';
import { IngressHarness } from './ingress.harness.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/onebot');

function fixtureText(name: string): string {
  return readFileSync(join(FIXTURES, name), 'utf8');
}

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(fixtureText(name)) as Record<string, unknown>;
}

const GROUP_TEXT = 'message-group/text-napcat.json';
const GROUP_AT = 'message-group/at-only-with-group-name-napcat.json';

function payload(event: EventEnvelope | undefined): MessagePayload {
  return event?.payload as MessagePayload;
}

describe('ingress over HTTP POST (real Redis)', () => {
  let ingress: IngressHarness;

  beforeAll(async () => {
    ingress = await IngressHarness.start();
  });

  afterAll(async () => {
    await ingress.stop();
  });

  it('appends a NapCat group message as exactly one valid envelope in its partition stream', async () => {
    const response = await ingress.post(fixtureText(GROUP_TEXT));
    expect(response.status).toBe(204);
    const events = await ingress.events('30001');
    expect(events).toHaveLength(1);
    expect(envelopeErrors(events[0])).toEqual([]);
    expect(events[0]).toMatchObject({ kind: 'message.observed', groupId: '30001', source: 'ingress' });
    expect(payload(events[0])).toMatchObject({ messageId: '2096329721', selfId: '10001', text: 'test' });
    expect(await ingress.metric('qunli_ingress_accepted_total', { kind: 'message.observed' })).toBe(1);
    expect(await ingress.metric('qunli_ingress_received_total', { transport: 'http', post_type: 'message' })).toBe(1);
  });

  it('appends an upstream retry of the same message once and answers it 204', async () => {
    const before = (await ingress.events('30001')).length;
    const again = await ingress.post(fixtureText(GROUP_TEXT));
    expect(again.status).toBe(204);
    expect(await ingress.events('30001')).toHaveLength(before);
    expect(await ingress.metric('qunli_ingress_duplicates_total')).toBe(1);
  });

  it('an @ of the bot becomes message.direct with direct priority', async () => {
    expect((await ingress.post(fixtureText(GROUP_AT))).status).toBe(204);
    const events = await ingress.events('30012');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'message.direct', priority: 0 });
    expect(payload(events[0])).toMatchObject({ directReason: 'at', mentionsSelf: true, groupName: 'Test Group A' });
  });

  it('refuses an invalid payload with 400 naming the field, counts it, and appends nothing', async () => {
    const before = await ingress.totalEvents();
    const broken = { ...fixture(GROUP_TEXT), group_id: 'not-a-group', message_id: 77 };
    const response = await ingress.post(JSON.stringify(broken));
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; field: string; message: string } };
    expect(body.error).toMatchObject({ code: 'ONEBOT.INVALID_PAYLOAD', field: 'group_id' });
    expect(body.error.message).toContain('not-a-group');
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'invalid_payload' })).toBe(1);
    expect(await ingress.totalEvents()).toBe(before);
    // …and the service keeps serving.
    const next = { ...fixture(GROUP_TEXT), message_id: 78 };
    expect((await ingress.post(JSON.stringify(next))).status).toBe(204);
    expect(await ingress.totalEvents()).toBe(before + 1);
  });

  it('refuses bad JSON with 400 ONEBOT.BAD_JSON', async () => {
    const response = await ingress.post('{"post_type": "message",');
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ONEBOT.BAD_JSON');
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'bad_json' })).toBe(1);
  });

  it('refuses a body over 1 MiB with 413 and counts it as too_large', async () => {
    const huge = JSON.stringify({ ...fixture(GROUP_TEXT), message: 'x'.repeat(1024 * 1024 + 10) });
    const response = await ingress.post(huge);
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ONEBOT.TOO_LARGE');
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'too_large' })).toBe(1);
  });

  it('refuses deeply nested bodies with a structured 400 and keeps serving', async () => {
    const before = await ingress.totalEvents();
    for (const deep of ['['.repeat(20_000), `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`]) {
      const response = await ingress.post(deep);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('ONEBOT.INVALID_PAYLOAD');
      expect(body.error.message).toContain('deeper than');
    }
    expect(await ingress.totalEvents()).toBe(before);
    expect((await ingress.post(JSON.stringify({ ...fixture(GROUP_TEXT), message_id: 79 }))).status).toBe(204);
  });

  it('answers a huge body sent without Content-Length (chunked) with 413, not a dropped connection', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 40) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await fetch(`${ingress.baseUrl}/onebot/v11/http`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: stream,
      duplex: 'half',
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ONEBOT.TOO_LARGE');
  });

  it('reads an oversized body to its end before answering 413, so a sender still writing gets the answer', async () => {
    // The sender declares 3 MiB and writes it in two halves 300 ms apart, as a slow link would. Ingress refuses it on
    // the declared length at once; had it closed the connection then, the second half would meet a reset.
    const half = Buffer.alloc(1536 * 1024, 'x');
    const req = request(`${ingress.baseUrl}/onebot/v11/http`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(half.length * 2) },
    });
    const failed = new Promise<string>((resolve) =>
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message)),
    );
    const written = new Promise<string>((resolve) => req.on('finish', () => resolve('written')));
    const answered = new Promise<{ status: number | undefined; body: string }>((resolve) =>
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      }),
    );
    req.write(half);
    setTimeout(() => req.end(half), 300);
    const stuck = sleep(3000).then(() => 'neither written nor failed in 3 s');
    expect(await Promise.race([written, failed, stuck])).toBe('written');
    const { status, body } = await answered;
    expect(status).toBe(413);
    expect((JSON.parse(body) as { error: { code: string } }).error.code).toBe('ONEBOT.TOO_LARGE');
  });

  it('records notices, requests and the bot’s own messages as their own kinds, once each', async () => {
    const names = [
      'notice/group-recall-napcat.json',
      'request/friend-napcat.json',
      'message-sent/group-at-with-name-napcat.json',
    ];
    for (const name of names) expect((await ingress.post(fixtureText(name))).status).toBe(204);
    for (const name of names) expect((await ingress.post(fixtureText(name))).status).toBe(204);
    expect(await ingress.metric('qunli_ingress_accepted_total', { kind: 'message.recalled' })).toBe(1);
    expect(await ingress.metric('qunli_ingress_accepted_total', { kind: 'request.received' })).toBe(1);
    expect(await ingress.metric('qunli_ingress_accepted_total', { kind: 'message.echoed' })).toBe(1);
    expect(await ingress.metric('qunli_ingress_duplicates_total')).toBeGreaterThanOrEqual(3);
  });

  it('records the heartbeat time in a gauge', async () => {
    expect((await ingress.post(fixtureText('meta/heartbeat-napcat.json'))).status).toBe(204);
    expect(await ingress.metric('qunli_onebot_last_heartbeat_seconds', { self_id: '10001' })).toBe(1746673666);
    expect(await ingress.metric('qunli_onebot_online', { self_id: '10001' })).toBe(1);
  });
});

describe('ingress refusing a body far over its limit', () => {
  let ingress: IngressHarness;

  beforeAll(async () => {
    ingress = await IngressHarness.start({ QUNLI_INGRESS_MAX_BYTES: '1024' });
  });

  afterAll(async () => {
    await ingress.stop();
  });

  it('drops at most sixteen times the limit before it answers 413, however much more is declared', async () => {
    // 1 MiB declared against a 1 KiB limit; 64 KiB sent, the rest never: the answer comes without the body's end.
    const req = request(`${ingress.baseUrl}/onebot/v11/http`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(1024 * 1024) },
    });
    req.on('error', () => undefined);
    const answered = new Promise<number | undefined>((resolve) => req.on('response', (res) => resolve(res.statusCode)));
    req.write(Buffer.alloc(64 * 1024, 'x'));
    const late = sleep(3000).then(() => 'no answer in 3 s');
    expect(await Promise.race([answered, late])).toBe(413);
    req.destroy();
  });
});

describe('ingress authentication (ONEBOT_ACCESS_TOKEN and ONEBOT_SECRET)', () => {
  const secret = 'sign-me';
  const token = 'let-me-in';
  let ingress: IngressHarness;

  beforeAll(async () => {
    ingress = await IngressHarness.start({ ONEBOT_SECRET: secret, ONEBOT_ACCESS_TOKEN: token });
  });

  afterAll(async () => {
    await ingress.stop();
  });

  const body = fixtureText(GROUP_TEXT);
  const sign = (text: string, key = secret) => `sha1=${createHmac('sha1', key).update(text).digest('hex')}`;

  it('accepts a signed request with the token as a Bearer header or as ?access_token=', async () => {
    expect((await ingress.post(body, { Authorization: `Bearer ${token}`, 'X-Signature': sign(body) })).status).toBe(
      204,
    );
    const other = JSON.stringify({ ...fixture(GROUP_TEXT), message_id: 5 });
    const viaQuery = await ingress.post(
      other,
      { 'X-Signature': sign(other) },
      `/onebot/v11/http?access_token=${token}`,
    );
    expect(viaQuery.status).toBe(204);
    expect(await ingress.events('30001')).toHaveLength(2);
  });

  it('refuses a bad signature with 403 and appends nothing', async () => {
    const before = await ingress.totalEvents();
    const tampered = JSON.stringify({ ...fixture(GROUP_TEXT), message_id: 6 });
    const response = await ingress.post(tampered, { Authorization: `Bearer ${token}`, 'X-Signature': sign(body) });
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ONEBOT.BAD_SIGNATURE');
    const wrongKey = await ingress.post(tampered, {
      Authorization: `Bearer ${token}`,
      'X-Signature': sign(tampered, 'guess'),
    });
    expect(wrongKey.status).toBe(403);
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'bad_signature' })).toBe(2);
    expect(await ingress.totalEvents()).toBe(before);
  });

  it('refuses a missing signature, and a missing or wrong token, with 401', async () => {
    expect((await ingress.post(body, { Authorization: `Bearer ${token}` })).status).toBe(401);
    const noToken = await ingress.post(body, { 'X-Signature': sign(body) });
    expect(noToken.status).toBe(401);
    expect(((await noToken.json()) as { error: { code: string } }).error.code).toBe('ONEBOT.UNAUTHORIZED');
    expect((await ingress.post(body, { Authorization: 'Bearer nope', 'X-Signature': sign(body) })).status).toBe(401);
    // The token is checked before the body is read: bad JSON without a token is unauthorized, not bad_json.
    expect((await ingress.post('{oops')).status).toBe(401);
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'unauthorized' })).toBe(4);
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'bad_json' })).toBe(0);
  });

  it('refuses a reverse WebSocket upgrade without the token', async () => {
    const socket = new WebSocket(`${ingress.wsUrl}/onebot/v11/ws`);
    const [error] = (await once(socket, 'error')) as [Error];
    expect(error.message).toBe('Unexpected server response: 401');
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'unauthorized' })).toBe(5);
  });
});

describe('ingress over reverse WebSocket', () => {
  let ingress: IngressHarness;

  beforeAll(async () => {
    ingress = await IngressHarness.start({ ONEBOT_ACCESS_TOKEN: 'ws-token' });
  });

  afterAll(async () => {
    await ingress.stop();
  });

  it('appends the events a connected implementation sends, skipping API responses and bad frames', async () => {
    const socket = new WebSocket(`${ingress.wsUrl}/onebot/v11/ws`, {
      headers: { Authorization: 'Bearer ws-token', 'X-Self-ID': '10001', 'X-Client-Role': 'Universal' },
    });
    await once(socket, 'open');
    socket.send(fixtureText('meta/lifecycle-connect-napcat.json'));
    socket.send(fixtureText('api-response/send-private-msg-ok-napcat.json'));
    socket.send('{not json');
    socket.send(fixtureText(GROUP_TEXT));
    socket.send(fixtureText(GROUP_AT));
    const events = await ingress.waitForEvents('30001', 1);
    expect(events).toHaveLength(1);
    expect(payload(events[0]).messageId).toBe('2096329721');
    expect(await ingress.waitForEvents('30012', 1)).toHaveLength(1);
    expect(socket.readyState).toBe(WebSocket.OPEN);
    expect(await ingress.metric('qunli_ingress_rejected_total', { reason: 'bad_json' })).toBe(1);
    expect(await ingress.metric('qunli_ingress_ignored_total', { reason: 'api_response' })).toBe(1);
    expect(await ingress.metric('qunli_onebot_connections', { transport: 'ws_reverse' })).toBe(1);
    expect(
      await ingress.metric('qunli_ingress_received_total', { transport: 'ws_reverse', post_type: 'message' }),
    ).toBe(2);
    socket.close();
    await once(socket, 'close');
  });

  it('accepts the token as a query parameter on the upgrade', async () => {
    const socket = new WebSocket(`${ingress.wsUrl}/onebot/v11/ws?access_token=ws-token`);
    await once(socket, 'open');
    socket.send(JSON.stringify({ ...fixture(GROUP_TEXT), message_id: 99 }));
    expect(await ingress.waitForEvents('30001', 2)).toHaveLength(2);
    socket.close();
    await once(socket, 'close');
  });
});

describe('ingress as a forward WebSocket client (ONEBOT_WS_URL)', () => {
  let implementation: WebSocketServer;
  let ingress: IngressHarness;
  const connections: { socket: WebSocket; authorization: string | undefined }[] = [];
  const waiters: (() => void)[] = [];

  async function connection(n: number): Promise<WebSocket> {
    while (connections.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
    return connections[n - 1]!.socket;
  }

  beforeAll(async () => {
    implementation = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(implementation, 'listening');
    implementation.on('connection', (socket, req) => {
      connections.push({ socket, authorization: req.headers.authorization });
      waiters.splice(0).forEach((wake) => wake());
    });
    const { port } = implementation.address() as AddressInfo;
    ingress = await IngressHarness.start({ ONEBOT_WS_URL: `ws://127.0.0.1:${port}`, ONEBOT_ACCESS_TOKEN: 'fwd' });
  });

  afterAll(async () => {
    await ingress.stop();
    for (const { socket } of connections) socket.terminate();
    implementation.close();
  });

  it('connects with the token, appends the events it is sent, and reconnects after a drop', async () => {
    const first = await connection(1);
    expect(connections[0]?.authorization).toBe('Bearer fwd');
    first.send(fixtureText(GROUP_TEXT));
    expect(await ingress.waitForEvents('30001', 1)).toHaveLength(1);

    first.terminate();
    const second = await connection(2);
    second.send(fixtureText(GROUP_AT));
    const events = await ingress.waitForEvents('30012', 1);
    expect(events).toHaveLength(1);
    expect(events[0]?.kind).toBe('message.direct');
    expect(
      await ingress.metric('qunli_ingress_received_total', { transport: 'ws_forward', post_type: 'message' }),
    ).toBe(2);
  });
});

describe('ingress while Redis is down', () => {
  let ingress: IngressHarness;

  beforeAll(async () => {
    // Nothing listens on port 1: the app's connection never becomes ready.
    ingress = await IngressHarness.start({ REDIS_URL: 'redis://127.0.0.1:1' });
  });

  afterAll(async () => {
    await ingress.stop();
  });

  it('answers 503 so the implementation retries, and does not claim the message', async () => {
    const response = await ingress.post(fixtureText(GROUP_TEXT));
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ONEBOT.UNAVAILABLE');
    expect(await ingress.ownMetric('qunli_ingress_unavailable_total', { transport: 'http' })).toBe(1);
    expect(await ingress.ownMetric('qunli_ingress_received_total', { transport: 'http' })).toBe(1);
    expect(await ingress.ownMetric('qunli_ingress_accepted_total', { kind: 'message.observed' })).toBe(0);
  });
});
