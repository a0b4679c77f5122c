import { verifySignature } from '@app/onebot';
import { startSimulator, type FeedEntry, type RunningSimulator } from './simulator.js';
import { startRecordingServer, type RecordingServer } from '@app/testing';

/** Reads the page's server-sent event stream and hands out entries as they arrive. */
class FeedReader {
  private buffer = '';
  private readonly entries: FeedEntry[] = [];
  private readonly controller = new AbortController();
  private reader!: ReadableStreamDefaultReader<Uint8Array>;

  async open(url: string): Promise<void> {
    const response = await fetch(`${url}/sim/feed`, { signal: this.controller.signal });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    this.reader = response.body!.getReader();
  }

  async next(predicate: (e: FeedEntry) => boolean): Promise<FeedEntry> {
    const decoder = new TextDecoder();
    for (;;) {
      const found = this.entries.find(predicate);
      if (found) return found;
      const { value, done } = await this.reader.read();
      if (done) throw new Error('feed closed');
      this.buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = this.buffer.indexOf('\n\n')) >= 0) {
        const frame = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        if (frame.split('\n').some((l) => l.startsWith('event:'))) continue;
        const data = frame
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        if (data) this.entries.push(JSON.parse(data));
      }
    }
  }

  close(): void {
    this.controller.abort();
  }
}

describe('chat simulator', () => {
  let ingress: RecordingServer;
  let simulator: RunningSimulator;

  beforeEach(async () => {
    ingress = await startRecordingServer();
    simulator = await startSimulator({
      port: 0,
      host: '127.0.0.1',
      ingressUrl: ingress.url,
      selfId: '10001',
      nickname: '小群',
      accessToken: 'tok',
      secret: 'sec',
      groups: ['30001'],
    });
  });

  afterEach(async () => {
    await simulator.stop();
    await ingress.close();
  });

  it('serves the chat page', async () => {
    const response = await fetch(`${simulator.url}/`);
    expect(response.headers.get('content-type')).toContain('text/html');
    const html = await response.text();
    expect(html).toContain('群聊模拟器');
    expect(html).toContain('/sim/feed');
  });

  it('posts what a person types to ingress as a signed NapCat group message', async () => {
    const response = await fetch(`${simulator.url}/sim/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ groupId: '30001', userId: '20002', nickname: 'Bob', text: '在吗？', atSelf: true }),
    });
    expect(response.status).toBe(200);
    expect(ingress.received).toHaveLength(1);
    const [got] = ingress.received;
    expect(got!.headers.authorization).toBe('Bearer tok');
    expect(verifySignature('sec', got!.raw, got!.headers['x-signature'] as string)).toBe(true);
    expect(got!.body).toMatchObject({
      post_type: 'message',
      message_type: 'group',
      self_id: 10001,
      group_id: 30001,
      user_id: 20002,
      sender: { user_id: 20002, nickname: 'Bob' },
      message: [
        { type: 'at', data: { qq: '10001' } },
        { type: 'text', data: { text: ' 在吗？' } },
      ],
    });
    expect(simulator.feed.some((e) => e.kind === 'user' && e.text === '@小群 在吗？')).toBe(true);
  });

  it("shows the bot's send_group_msg in the page's feed", async () => {
    const feed = new FeedReader();
    await feed.open(simulator.url);
    try {
      await feed.next((e) => e.kind === 'system');
      const api = await fetch(`${simulator.url}/send_group_msg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer tok' },
        body: JSON.stringify({
          group_id: 30001,
          message: [
            { type: 'reply', data: { id: '123' } },
            { type: 'text', data: { text: '我在呢' } },
          ],
        }),
      });
      const answer = (await api.json()) as { data: { message_id: number } };
      expect(answer).toMatchObject({ status: 'ok', retcode: 0 });
      const entry = await feed.next((e) => e.kind === 'bot');
      expect(entry).toMatchObject({
        groupId: '30001',
        text: '我在呢',
        replyTo: '123',
        messageId: answer.data.message_id,
      });
    } finally {
      feed.close();
    }
  });

  it('checks the OneBot token on the API side like the real thing', async () => {
    const api = await fetch(`${simulator.url}/send_group_msg`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ group_id: 30001, message: 'x' }),
    });
    expect(api.status).toBe(401);
    expect(simulator.feed.some((e) => e.kind === 'bot')).toBe(false);
  });

  it('rejects a bad message from the page with a clear reason and posts nothing', async () => {
    const response = await fetch(`${simulator.url}/sim/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ groupId: 'abc', userId: '20002', nickname: '', text: 'hi' }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { problems: string[] };
    expect(body.problems).toHaveLength(2);
    expect(ingress.received).toHaveLength(0);
  });

  it('says so in the feed when ingress cannot be reached', async () => {
    await ingress.close();
    const response = await fetch(`${simulator.url}/sim/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ groupId: '30001', userId: '20002', nickname: 'Bob', text: 'hi' }),
    });
    expect(response.status).toBe(502);
    expect(simulator.feed.some((e) => e.kind === 'error' && e.text.includes('ingress'))).toBe(true);
  });
});

describe('chat simulator: every trigger of the OneBot edge (issue 5)', () => {
  let ingress: RecordingServer;
  let simulator: RunningSimulator;
  const say = (path: string, body: unknown) =>
    fetch(`${simulator.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeEach(async () => {
    ingress = await startRecordingServer();
    simulator = await startSimulator({
      port: 0,
      host: '127.0.0.1',
      ingressUrl: ingress.url,
      selfId: '10001',
      nickname: '林小满',
      groups: ['30001'],
      offline: true,
      transcript: [
        {
          seq: 0,
          kind: 'user',
          at: '2026-01-01T00:00:00.000Z',
          text: '重启前',
          groupId: '30001',
          userId: '20001',
          nickname: 'Alice',
          messageId: '501',
        },
        {
          seq: 1,
          kind: 'bot',
          at: '2026-01-01T00:00:05.000Z',
          text: '我记得',
          groupId: '30001',
          userId: '10001',
          messageId: '502',
        },
      ],
    });
  });

  afterEach(async () => {
    await simulator.stop();
    await ingress.close();
  });

  it('names the bot after the persona, shows the offline badge, and keeps the transcript from the log', async () => {
    expect(await (await fetch(`${simulator.url}/sim/config`)).json()).toMatchObject({
      nickname: '林小满',
      offline: true,
    });
    expect(simulator.feed.filter((e) => e.kind === 'user' || e.kind === 'bot').map((e) => e.text)).toEqual([
      '重启前',
      '我记得',
    ]);
    // The transcript is the implementation's history too (what verification of an unknown send reads).
    const history = await fetch(`${simulator.url}/get_group_msg_history`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ group_id: 30001 }),
    });
    expect(((await history.json()) as { data: { messages: unknown[] } }).data.messages).toHaveLength(2);
  });

  it('a quote of the bot’s message carries the reply and the automatic @ of the bot', async () => {
    expect(
      (await say('/sim/say', { groupId: '30001', userId: '20002', nickname: 'Bob', text: '真的吗', replyTo: '502' }))
        .status,
    ).toBe(200);
    expect(ingress.received[0]!.body.message).toEqual([
      { type: 'reply', data: { id: '502' } },
      { type: 'at', data: { qq: '10001' } },
      { type: 'text', data: { text: ' 真的吗' } },
    ]);
  });

  it('a private chat, a poke, a recall of one’s own message and a forward go out as NapCat reports them', async () => {
    expect((await say('/sim/say', { userId: '20003', nickname: 'Carol', text: '私聊' })).status).toBe(200);
    expect(ingress.received[0]!.body).toMatchObject({ message_type: 'private', user_id: 20003, sub_type: 'friend' });
    expect((await say('/sim/poke', { groupId: '30001', userId: '20002', nickname: 'Bob' })).status).toBe(200);
    expect(ingress.received[1]!.body).toMatchObject({
      notice_type: 'notify',
      sub_type: 'poke',
      target_id: 10001,
      user_id: 20002,
      group_id: 30001,
    });
    const sent = (await (
      await say('/sim/say', { groupId: '30001', userId: '20002', nickname: 'Bob', text: '发错了' })
    ).json()) as { messageId: number };
    expect((await say('/sim/recall', { messageId: String(sent.messageId) })).status).toBe(200);
    expect(ingress.received[3]!.body).toMatchObject({
      notice_type: 'group_recall',
      message_id: sent.messageId,
      user_id: 20002,
    });
    expect((await say('/sim/recall', { messageId: '502' })).status).toBe(400);
    expect(
      (await say('/sim/say', { groupId: '30001', userId: '20002', nickname: 'Bob', text: 'x', forward: ['一', '二'] }))
        .status,
    ).toBe(200);
    expect((ingress.received[4]!.body.message as { type: string }[])[0]!.type).toBe('forward');
    expect(simulator.feed.find((e) => e.forward !== undefined)?.forward).toEqual(['一', '二']);
  });

  it('shows “thinking” while an episode runs', async () => {
    const response = await fetch(`${simulator.url}/sim/feed`);
    const reader = response.body!.getReader();
    simulator.setThinking({ conversation: 'g:30001', thinking: true });
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('event: thinking')) text += decoder.decode((await reader.read()).value);
    expect(text).toContain('{"conversation":"g:30001","thinking":true}');
    await reader.cancel();
  });
});
