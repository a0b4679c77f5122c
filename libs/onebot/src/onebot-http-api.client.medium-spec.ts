import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Metrics } from '@app/platform';
import { FakeOneBot } from '@app/testing';
import { OneBotHttpApi } from './onebot-http-api.client.js';
import { Segment } from './onebot-types.js';

function listen(server: HttpServer | TcpServer): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function close(server: HttpServer | TcpServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

describe('OneBotHttpApi against a NapCat-like peer', () => {
  const TOKEN = 'tok-123';
  let fake: FakeOneBot;
  let api: OneBotHttpApi;
  let metrics: Metrics;

  beforeEach(async () => {
    fake = new FakeOneBot({ accessToken: TOKEN, selfId: '10001', nickname: '小群' });
    const url = await fake.start();
    metrics = new Metrics('test', false);
    api = new OneBotHttpApi({ baseUrl: url, accessToken: TOKEN, timeoutMs: 500, metrics });
  });

  afterEach(async () => {
    await api.close();
    await fake.stop();
  });

  it('sends a group message and returns the message id the implementation assigned', async () => {
    const outcome = await api.sendGroupMsg('30001', [Segment.reply('2096329721'), Segment.text('你好呀')]);
    expect(outcome.kind).toBe('ok');
    expect(fake.sentMessages).toHaveLength(1);
    const sent = fake.sentMessages[0]!;
    expect(sent).toMatchObject({ action: 'send_group_msg', groupId: '30001', text: '你好呀', replyTo: '2096329721' });
    expect(outcome.kind === 'ok' && outcome.data?.message_id).toBe(sent.messageId);
    expect(fake.calls[0]!.params.group_id).toBe(30001);
    expect(await metrics.scrape()).toMatch(
      /qunli_onebot_api_calls_total\{action="send_group_msg",transport="http",outcome="ok"[^}]*\} 1/,
    );
  });

  it('sends private messages and reads the login info', async () => {
    expect((await api.sendPrivateMsg('20001', [Segment.text('hi')])).kind).toBe('ok');
    expect(fake.sentMessages[0]).toMatchObject({ messageType: 'private', userId: '20001', text: 'hi' });
    const login = await api.getLoginInfo();
    expect(login).toEqual({ kind: 'ok', data: { user_id: 10001, nickname: '小群' } });
  });

  it('is refused without the right token', async () => {
    const stranger = new OneBotHttpApi({ baseUrl: fake.url, accessToken: 'wrong', timeoutMs: 500 });
    const anonymous = new OneBotHttpApi({ baseUrl: fake.url, timeoutMs: 500 });
    try {
      expect(await stranger.sendGroupMsg('30001', [Segment.text('x')])).toMatchObject({
        kind: 'failed',
        code: 'ONEBOT.UNAUTHORIZED',
        httpStatus: 403,
      });
      expect(await anonymous.getLoginInfo()).toMatchObject({ kind: 'failed', httpStatus: 401 });
      expect(fake.sentMessages).toHaveLength(0);
    } finally {
      await stranger.close();
      await anonymous.close();
    }
  });

  it('reports a NapCat timeout (1200) as unknown and a bad request (1400) as failed', async () => {
    fake.failNext(1, 1200);
    fake.failNext(1, 1400);
    expect(await api.sendGroupMsg('30001', [Segment.text('a')])).toMatchObject({ kind: 'unknown', retcode: 1200 });
    expect(await api.sendGroupMsg('30001', [Segment.text('b')])).toMatchObject({ kind: 'failed', retcode: 1400 });
    expect((await api.sendGroupMsg('30001', [Segment.text('c')])).kind).toBe('ok');
    expect(fake.sentMessages.map((m) => m.text)).toEqual(['c']);
  });

  it('reports an unsupported action as failed, like NapCat 1404', async () => {
    expect(await api.call('set_qq_avatar', { file: 'x' })).toMatchObject({
      kind: 'failed',
      code: 'ONEBOT.UNSUPPORTED',
    });
  });

  it('reports a response that never comes as unknown: the message may well have gone out', async () => {
    fake.holdSends();
    const outcome = await api.sendGroupMsg('30001', [Segment.text('held')]);
    expect(outcome).toMatchObject({ kind: 'unknown', code: 'ONEBOT.TIMEOUT' });
    expect(fake.sentMessages.map((m) => m.text)).toEqual(['held']);
  });

  it('reports a refused connection as unreachable: nothing was sent', async () => {
    const port = fake.port;
    await fake.stop();
    const gone = new OneBotHttpApi({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 500, metrics });
    try {
      expect(await gone.sendGroupMsg('30001', [Segment.text('x')])).toMatchObject({
        kind: 'unreachable',
        code: 'ONEBOT.UNREACHABLE',
      });
      expect(await metrics.scrape()).toMatch(/outcome="unreachable"[^}]*\} 1/);
    } finally {
      await gone.close();
    }
  });

  it('reports a connection reset after the request was written as unknown', async () => {
    const received: string[] = [];
    const server = createTcpServer((socket) => {
      socket.on('data', (chunk) => {
        received.push(chunk.toString());
        socket.resetAndDestroy();
      });
    });
    const port = await listen(server);
    const api2 = new OneBotHttpApi({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 500 });
    try {
      expect(await api2.sendGroupMsg('30001', [Segment.text('x')])).toMatchObject({ kind: 'unknown' });
      expect(received.join('')).toContain('POST /send_group_msg');
    } finally {
      await api2.close();
      await close(server);
    }
  });

  it('reports HTTP 5xx as unknown and HTTP 4xx as failed', async () => {
    let status = 502;
    const server = createHttpServer((_req, res) => {
      res.writeHead(status).end('upstream trouble');
    });
    const port = await listen(server);
    const api2 = new OneBotHttpApi({ baseUrl: `http://127.0.0.1:${port}/onebot`, timeoutMs: 500 });
    try {
      expect(await api2.sendGroupMsg('30001', [Segment.text('x')])).toMatchObject({
        kind: 'unknown',
        code: 'ONEBOT.SERVER_ERROR',
        httpStatus: 502,
      });
      status = 406;
      expect(await api2.sendGroupMsg('30001', [Segment.text('x')])).toMatchObject({ kind: 'failed', httpStatus: 406 });
    } finally {
      await api2.close();
      server.closeAllConnections();
      await close(server);
    }
  });
});
