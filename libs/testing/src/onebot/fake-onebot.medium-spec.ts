import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { verifySignature, type OneBotApiResponse } from '@app/onebot';
import { startRecordingServer, type RecordingServer } from '../recording-server.js';
import { FakeOneBot } from './fake-onebot.js';

const FIXTURES = join(import.meta.dirname, '../../../../test/fixtures/onebot');
const fixture = (path: string) => JSON.parse(readFileSync(join(FIXTURES, path), 'utf8')) as Record<string, unknown>;

function typeShape(value: unknown): unknown {
  if (Array.isArray(value)) return 'array';
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeShape(v)]));
  }
  return typeof value;
}

async function post(url: string, body: unknown, token?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as OneBotApiResponse<Record<string, unknown>> };
}

describe('FakeOneBot', () => {
  let fake: FakeOneBot;
  let ingress: RecordingServer;

  beforeEach(async () => {
    ingress = await startRecordingServer();
  });

  afterEach(async () => {
    await fake.stop();
    await ingress.close();
  });

  it('posts a signed NapCat-shaped group message with the same fields and types as a real capture', async () => {
    fake = new FakeOneBot({ accessToken: 'tok', secret: 's3cret', selfId: '10001' });
    await fake.start();
    const result = await fake.postGroupMessage({
      ingressUrl: ingress.url,
      groupId: '30001',
      userId: '20001',
      nickname: 'Alice',
      text: 'test',
    });
    expect(result.status).toBe(204);
    const [got] = ingress.received;
    expect(got!.headers.authorization).toBe('Bearer tok');
    expect(got!.headers['x-self-id']).toBe('10001');
    expect(verifySignature('s3cret', got!.raw, got!.headers['x-signature'] as string)).toBe(true);
    const capture = fixture('message-group/text-napcat.json');
    expect(typeShape(got!.body)).toEqual(typeShape(capture));
    expect(got!.body).toMatchObject({ group_id: 30001, user_id: 20001, self_id: 10001, raw_message: 'test' });
  });

  it('writes an @ of the bot as an at segment followed by a text segment, as the QQ client does', async () => {
    fake = new FakeOneBot({ selfId: '10001' });
    await fake.start();
    await fake.postGroupMessage({
      ingressUrl: ingress.url,
      groupId: '30001',
      userId: '20002',
      nickname: 'Bob',
      text: '在吗 [测试]',
      atSelf: true,
    });
    const [got] = ingress.received;
    expect(got!.headers['x-signature']).toBeUndefined();
    expect(got!.headers.authorization).toBeUndefined();
    expect(got!.body.message).toEqual([
      { type: 'at', data: { qq: '10001' } },
      { type: 'text', data: { text: ' 在吗 [测试]' } },
    ]);
    expect(got!.body.raw_message).toBe('[CQ:at,qq=10001] 在吗 &#91;测试&#93;');
  });

  it('answers the API like NapCat: login info, group info, unknown actions with 1404', async () => {
    fake = new FakeOneBot({ accessToken: 'tok', selfId: '10005', nickname: '小群' });
    const url = await fake.start();
    expect((await post(`${url}/get_login_info`, {}, 'tok')).json).toMatchObject({
      status: 'ok',
      retcode: 0,
      data: { user_id: 10005, nickname: '小群' },
      message: '',
      wording: '',
    });
    expect((await post(`${url}/get_group_info`, { group_id: '30001' }, 'tok')).json.data?.group_id).toBe(30001);
    expect((await post(`${url}/get_status`, {}, 'tok')).json.data).toMatchObject({ online: true, good: true });
    expect((await post(`${url}/get_version_info`, {}, 'tok')).json.data?.protocol_version).toBe('v11');
    expect((await post(`${url}/set_group_kick`, {}, 'tok')).json).toMatchObject({ status: 'failed', retcode: 1404 });
    expect((await post(`${url}/send_group_msg`, { message: 'x' }, 'tok')).json).toMatchObject({ retcode: 400 });
    expect((await post(`${url}/get_login_info`, {})).status).toBe(401);
    expect(fake.calls.map((c) => [c.action, c.authorized])).toEqual([
      ['get_login_info', true],
      ['get_group_info', true],
      ['get_status', true],
      ['get_version_info', true],
      ['set_group_kick', true],
      ['send_group_msg', true],
      ['get_login_info', false],
    ]);
  });

  it('accepts CQ strings and send_msg, and gives int32 message ids', async () => {
    fake = new FakeOneBot();
    const url = await fake.start();
    const a = await post(`${url}/send_msg`, { message_type: 'group', group_id: 30002, message: '[CQ:face,id=1]好' });
    const b = await post(`${url}/send_msg`, { user_id: '20003', message: [{ type: 'text', data: { text: '私聊' } }] });
    expect(fake.sentMessages.map((m) => [m.messageType, m.groupId ?? m.userId, m.text])).toEqual([
      ['group', '30002', '[表情]好'],
      ['private', '20003', '私聊'],
    ]);
    for (const r of [a, b]) {
      const id = Number(r.json.data?.message_id);
      expect(Number.isInteger(id)).toBe(true);
      expect(Math.abs(id)).toBeLessThan(2 ** 31);
    }
  });

  it('records a held send as received and answers only when released', async () => {
    fake = new FakeOneBot();
    const url = await fake.start();
    fake.holdSends();
    let answered = false;
    const pending = post(`${url}/send_group_msg`, { group_id: 30001, message: 'held' }).then((r) => {
      answered = true;
      return r;
    });
    await fake.waitForSends(1, 5000);
    expect(fake.sentMessages.map((m) => m.text)).toEqual(['held']);
    expect(fake.heldSends).toBe(1);
    expect(answered).toBe(false);
    fake.releaseSends();
    expect((await pending).json.retcode).toBe(0);
  });

  it('fails the next sends with the given retcode without delivering them', async () => {
    fake = new FakeOneBot();
    const url = await fake.start();
    fake.failNext(2, 1200);
    expect((await post(`${url}/send_group_msg`, { group_id: 1, message: 'a' })).json.retcode).toBe(1200);
    expect((await post(`${url}/send_group_msg`, { group_id: 1, message: 'b' })).json.retcode).toBe(1200);
    expect((await post(`${url}/send_group_msg`, { group_id: 1, message: 'c' })).json.retcode).toBe(0);
    expect(fake.sentMessages.map((m) => m.text)).toEqual(['c']);
    expect(fake.calls).toHaveLength(3);
  });

  it('reports its own sent messages to ingress as message_sent when asked to', async () => {
    fake = new FakeOneBot({ selfId: '10006', nickname: '机器人', reportSelfMessagesTo: ingress.url });
    const url = await fake.start();
    const r = await post(`${url}/send_group_msg`, {
      group_id: 30006,
      message: [{ type: 'text', data: { text: '喵' } }],
    });
    await fake.stop();
    expect(fake.reportErrors).toEqual([]);
    const [got] = ingress.received;
    expect(got!.body).toMatchObject({
      post_type: 'message_sent',
      self_id: 10006,
      user_id: 10006,
      group_id: 30006,
      target_id: 30006,
      message_id: r.json.data?.message_id,
      raw_message: '喵',
    });
    const capture = fixture('message-sent/group-at-with-name-napcat.json');
    expect(Object.keys(got!.body).sort()).toEqual(Object.keys(capture).sort());
  });
});
