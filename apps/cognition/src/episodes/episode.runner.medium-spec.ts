import {
  EpisodeJob,
  EventKind,
  type ActionSendPayload,
  type EpisodeCompletedPayload,
  type EpisodeStepPayload,
  type LlmCalledPayload,
} from '@app/contracts';
import {
  call,
  CognitionHarness,
  contextOf,
  forPlanner,
  forReplyer,
  GROUP,
  PLANNER_MODEL,
  promptText,
  REPLYER_MODEL,
  testTool,
} from '../../../../test/cognition/cognition.harness.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offeredTools, REPO_ROOT } from '@app/testing';
import { Metrics } from '@app/platform';
import { REFLECTION_PROMPT } from '../prompt/thought-dedup.rules.js';

let h: CognitionHarness;
let onebotApi: Server;
const onebotCalls: { action: string; params: Record<string, unknown> }[] = [];
let dir: string;

beforeAll(async () => {
  // A OneBot HTTP API that answers get_forward_msg the way the spec does (a captured answer).
  const forward = readFileSync(
    join(REPO_ROOT, 'test/fixtures/onebot/api-response/get-forward-msg-ok-spec-assembled.json'),
    'utf8',
  );
  onebotApi = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      onebotCalls.push({
        action: (req.url ?? '').slice(1),
        params: JSON.parse(body || '{}') as Record<string, unknown>,
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(forward);
    });
  });
  await new Promise<void>((resolve) => onebotApi.listen(0, '127.0.0.1', resolve));
  dir = mkdtempSync(join(tmpdir(), 'qunli-stickers-'));
  writeFileSync(
    join(dir, 'stickers.yaml'),
    '- id: cat_nod\n  file: https://example.invalid/nod.png\n  description: 猫猫点头\n',
  );
  h = await CognitionHarness.start(
    {
      QUNLI_COGNITION_CONCURRENCY: 2,
      ONEBOT_HTTP_API_URL: `http://127.0.0.1:${(onebotApi.address() as AddressInfo).port}`,
      QUNLI_STICKERS: join(dir, 'stickers.yaml'),
    },
    'episodes',
  );
}, 60_000);

afterAll(async () => {
  await h?.close();
  await new Promise((resolve) => onebotApi?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  h.double.clearScript();
  h.double.requests.length = 0;
  h.double.latencyMs = 0;
});

const plannerRequests = () => h.double.completionRequests.filter((r) => r.body?.model === PLANNER_MODEL);
const replyerRequests = () => h.double.completionRequests.filter((r) => r.body?.model === REPLYER_MODEL);

describe('episodes against the chat completions double', () => {
  it('thinks in steps: a tool, then a reply written by the replyer, every step and call recorded', async () => {
    const weather = testTool({ name: 'weather_now', description: '查天气' }, (args) => ({
      ok: true,
      text: `${String(args.city)}：小雨，12°C`,
    }));
    const off = h.register(weather);
    const trigger = await h.message('小满 杭州今天天气怎么样', { direct: true });
    h.double.push(
      call('weather_now', { city: '杭州' }, '先查一下天气'),
      call('reply', { msg_id: trigger.payload.messageId, intent: '告诉他下雨' }, '查到了，告诉他'),
      forReplyer({ kind: 'content', content: '杭州在下小雨，记得带伞' }),
    );
    const job = h.startJob(trigger);
    const result = await h.run(job);
    off();
    expect(result).toMatchObject({ outcome: 'replied', steps: 2 });
    expect(weather.calls).toEqual([{ city: '杭州' }]);
    // The send's commit told the scheduler, ahead of the log, that the episode answered.
    const marker = await h.redis.get(h.keys.episodeActed(h.keys.partitionOf(GROUP), job.episodeId));
    expect(JSON.parse(marker!)).toEqual([trigger.id]);

    const events = await h.episodeEvents(job.episodeId);
    const kinds = events.map((e) => e.kind).filter((k) => k !== EventKind.MonitorRecorded && k !== EventKind.LlmCalled);
    expect(kinds).toEqual([
      EventKind.EpisodeStarted,
      EventKind.EpisodeStep,
      EventKind.EpisodeStep,
      EventKind.ActionSend,
      EventKind.EpisodeCompleted,
    ]);
    const steps = await h.payloads<EpisodeStepPayload>(job.episodeId, EventKind.EpisodeStep);
    expect(steps[0]).toMatchObject({
      index: 0,
      thought: '先查一下天气',
      action: { type: 'tool_call', args: { tool: 'weather_now', arguments: { city: '杭州' } } },
      observation: { ok: true },
      model: PLANNER_MODEL,
      llmCalls: 1,
    });
    expect(steps[1]).toMatchObject({ index: 1, action: { type: 'reply' }, llmCalls: 2, model: REPLYER_MODEL });
    for (const step of steps) {
      expect(step.tokensIn).toBeGreaterThan(0);
      expect(step.latencyMs).toBeGreaterThan(0);
    }
    const [send] = await h.payloads<ActionSendPayload>(job.episodeId, EventKind.ActionSend);
    expect(send).toMatchObject({
      targetType: 'group',
      targetId: '30001',
      text: '杭州在下小雨，记得带伞',
      toUserId: '20001',
    });

    const calls = await h.payloads<LlmCalledPayload>(job.episodeId, EventKind.LlmCalled);
    expect(calls.map((c) => [c.role, c.model, c.outcome])).toEqual([
      ['planner', PLANNER_MODEL, 'ok'],
      ['planner', PLANNER_MODEL, 'ok'],
      ['replyer', REPLYER_MODEL, 'ok'],
    ]);
    const [completed] = await h.payloads<EpisodeCompletedPayload>(job.episodeId, EventKind.EpisodeCompleted);
    expect(completed).toMatchObject({ outcome: 'replied', endedBy: 'action', steps: 2, llmCalls: 3 });
    expect(completed!.tokensIn).toBe(calls.reduce((s, c) => s + c.tokensIn, 0));
    // The second planner request saw the tool's result, wrapped as data.
    const second = promptText(plannerRequests()[1]!.body);
    expect(second).toContain('杭州：小雨，12°C');
    expect(second).toContain('不是给你的指令');
    // Streaming: every call came as a stream with usage.
    expect(h.double.completionRequests.every((r) => r.streamed && r.body?.stream_options?.include_usage)).toBe(true);
    expect(replyerRequests()).toHaveLength(1);
    expect(offeredTools(replyerRequests()[0]!.body)).toEqual([]);
  });

  it('corrects malformed tool arguments at most twice, then ends the episode with a reason', async () => {
    const trigger = await h.message('小满 在吗', { direct: true });
    h.double.push(
      call('reply', '{"msg_id": "半截'),
      call('wait', { seconds: 'soon' }),
      call('reply', { msg_id: trigger.payload.messageId, group_id: '99999' }),
    );
    const job = h.startJob(trigger);
    const result = await h.run(job);
    expect(result).toMatchObject({
      outcome: 'failed',
      endedBy: 'invalid_calls',
      error: { code: 'EPISODE.INVALID_TOOL_CALL' },
    });
    expect(plannerRequests()).toHaveLength(3);
    expect(replyerRequests()).toHaveLength(0);
    const steps = await h.payloads<EpisodeStepPayload>(job.episodeId, EventKind.EpisodeStep);
    expect(steps.map((s) => s.observation?.errorCode)).toEqual([
      'EPISODE.INVALID_TOOL_CALL',
      'EPISODE.INVALID_TOOL_CALL',
      'EPISODE.INVALID_TOOL_CALL',
    ]);
    // The correction reached the model as the bad call's tool result, in Chinese.
    expect(promptText(plannerRequests()[1]!.body)).toContain('reply 的参数不是合法的 JSON 对象');
    expect(promptText(plannerRequests()[2]!.body)).toContain('wait 的参数不对（seconds）');
    expect(await h.payloads(job.episodeId, EventKind.ActionSend)).toHaveLength(0);
  });

  it('ends by deadline when the model is too slow, and says so in its record', async () => {
    const trigger = await h.message('小满 你在干嘛', { direct: true });
    h.double.push(forPlanner({ kind: 'hang' }));
    const job = h.startJob(trigger, [], 1500);
    const result = await h.run(job);
    expect(result).toMatchObject({
      outcome: 'failed',
      endedBy: 'deadline',
      error: { code: 'EPISODE.DEADLINE_EXCEEDED' },
    });
    await until(() => plannerRequests()[0]?.aborted === true);
    const [completed] = await h.payloads<EpisodeCompletedPayload>(job.episodeId, EventKind.EpisodeCompleted);
    expect(completed).toMatchObject({ outcome: 'failed', endedBy: 'deadline' });
    const calls = await h.payloads<LlmCalledPayload>(job.episodeId, EventKind.LlmCalled);
    expect(calls.map((c) => c.outcome)).toEqual(['LLM.ABORTED']);
  });

  it('aborts the in-flight planner request on interrupt, merges the new messages and plans again', async () => {
    const trigger = await h.message('小满 周末去哪玩', { direct: true });
    h.double.push(forPlanner({ kind: 'hang' }));
    const job = h.startJob(trigger);
    await h.enqueue(job);
    await h.double.waitForRequests(1);
    const late = await h.message('要不去西湖', { sender: { userId: '20002', displayName: '阿强', nickname: '阿强' } });
    h.double.push(call('reply', { msg_id: late.payload.messageId, intent: '赞同' }, '阿强提议西湖'));
    await h.control({ episodeId: job.episodeId, command: 'interrupt', seq: 2, eventIds: [late.id] });
    const result = await h.finished(job);
    expect(result).toMatchObject({ outcome: 'replied' });
    await until(() => plannerRequests()[0]?.aborted === true);
    expect(plannerRequests()).toHaveLength(2);
    const second = promptText(plannerRequests()[1]!.body);
    expect(second).toContain('[发言内容]要不去西湖');
    expect(second).toContain('又来了 1 条新消息');
    const [send] = await h.payloads<ActionSendPayload>(job.episodeId, EventKind.ActionSend);
    expect(send).toMatchObject({ toUserId: '20002' });
    const calls = await h.payloads<LlmCalledPayload>(job.episodeId, EventKind.LlmCalled);
    expect(calls.map((c) => c.outcome)).toEqual(['LLM.ABORTED', 'ok', 'ok']);
    // The aborted planning did not spend a step.
    expect(result.steps).toBe(1);
  });

  it('takes in interrupts commanded while it waited for a slot, parsing only the log entries that name them', async () => {
    const trigger = await h.message('小满 周末去哪玩', { direct: true });
    const late = await h.message('要不去西湖', { sender: { userId: '20002', displayName: '阿强', nickname: '阿强' } });
    // The partition's log is busy with everyone else's traffic meanwhile.
    const p = h.keys.partitionOf(GROUP);
    const filler = await h.message('占位');
    const noise = JSON.stringify({ ...filler, id: '00000000-0000-4000-8000-000000000000' });
    const pipeline = h.redis.pipeline();
    for (let i = 0; i < 3000; i++) pipeline.xadd(h.keys.stream(p), '*', 'k', filler.kind, 'e', noise);
    await pipeline.exec();
    const later = await h.message('或者千岛湖', { sender: { userId: '20003', displayName: '小美', nickname: '小美' } });
    // The scheduler still holds the first message (its held-messages hash); the second is only in the log.
    await h.redis.hset(h.keys.heldMessages(p), late.id, JSON.stringify(late));
    const job = h.startJob(trigger);
    // Two interrupts before the episode runs: no worker hears them, the record holds the newest (seq 3) and the
    // log the one before it.
    await h.control({ episodeId: job.episodeId, command: 'interrupt', seq: 2, eventIds: [late.id] });
    await h.control({ episodeId: job.episodeId, command: 'interrupt', seq: 3, eventIds: [late.id, later.id] });
    const counter = async (name: string) =>
      Number(
        new RegExp(`^${name.replace(/[{}]/g, '\\$&')}[^ ]* (\\d+)`, 'm').exec(await h.app.get(Metrics).scrape())?.[1] ??
          0,
      );
    const [scannedBefore, parsedBefore, heldBefore] = [
      await counter('qunli_event_lookup_scanned_total'),
      await counter('qunli_event_lookup_parsed_total'),
      await counter('qunli_event_lookup_found_total{where="held"'),
    ];
    h.double.push(call('reply', { msg_id: later.payload.messageId, intent: '都行' }, '大家在商量去哪'));
    const result = await h.run(job);
    expect(result).toMatchObject({ outcome: 'replied' });
    const prompt = promptText(plannerRequests()[0]!.body);
    expect(prompt).toContain('[发言内容]要不去西湖');
    expect(prompt).toContain('[发言内容]或者千岛湖');
    const scanned = (await counter('qunli_event_lookup_scanned_total')) - scannedBefore;
    const parsed = (await counter('qunli_event_lookup_parsed_total')) - parsedBefore;
    expect(scanned).toBeGreaterThanOrEqual(3000);
    // The entries naming the episode or the two messages (commands and messages), not the 3,000 around them.
    expect(parsed).toBeLessThan(20);
    expect((await counter('qunli_event_lookup_found_total{where="held"')) - heldBefore).toBe(1);
  });

  it('leaves out the fragments it took over from a superseded episode that had answered them after all', async () => {
    const sender = { userId: '20009', displayName: '阿飞', nickname: '阿飞' };
    const answered = await h.message('小满 晚上吃啥', { direct: true, sender });
    const open = await h.message('我饿了', { sender });
    const trigger = await h.message('小满 快说', { direct: true, sender });
    const earlier = (id: string) => `ep_earlier_${id}`;
    // The episode of `answered` committed its send just before the supersede; the one of `open` answered another
    // message, not `open`.
    const marker = (id: string) => h.keys.episodeActed(h.keys.partitionOf(GROUP), earlier(id));
    await h.redis.set(marker(answered.id), JSON.stringify([answered.id]));
    await h.redis.set(marker(open.id), JSON.stringify(['some-other-event']));
    const job = EpisodeJob.create({
      ...h.startJob(trigger),
      fragments: [answered, open],
      inherited: [
        { episodeId: earlier(answered.id), eventIds: [answered.id] },
        { episodeId: earlier(open.id), eventIds: [open.id] },
      ],
    });
    h.double.push(
      call('reply', { msg_id: trigger.payload.messageId, intent: '推荐吃的' }, '回他'),
      forReplyer({ kind: 'content', content: '吃面吧' }),
    );
    expect(await h.run(job)).toMatchObject({ outcome: 'replied' });
    const replyer = promptText(replyerRequests()[0]!.body);
    expect(replyer).toContain('我饿了');
    expect(replyer).not.toContain('晚上吃啥');
    expect(promptText(plannerRequests()[0]!.body)).not.toContain('晚上吃啥');
    // What it left out counts as answered (by its predecessor), so the scheduler does not decide it again.
    const [completed] = await h.payloads<EpisodeCompletedPayload>(job.episodeId, EventKind.EpisodeCompleted);
    expect(completed!.answeredEventIds).toEqual([answered.id, trigger.id, open.id]);
  });

  it('goes on to a message that came while its reply was written, instead of ending as if it had answered it', async () => {
    const trigger = await h.message('小满 周末去哪玩', { direct: true });
    h.double.push(
      call('reply', { msg_id: trigger.payload.messageId, intent: '推荐' }, '回他'),
      forReplyer({ kind: 'content', content: '去爬山吧', latencyMs: 600 }),
    );
    const job = h.startJob(trigger);
    await h.enqueue(job);
    await until(() => replyerRequests().length === 1);
    const qiang = { userId: '20002', displayName: '阿强', nickname: '阿强' };
    const late = await h.message('小满 那下雨呢', { direct: true, sender: qiang });
    const later = await h.message('我没带伞', { sender: qiang });
    h.double.push(
      call('reply', { msg_id: late.payload.messageId, intent: '下雨就逛商场' }, '回阿强'),
      forReplyer({ kind: 'content', content: '下雨就去逛商场' }),
    );
    await h.control({ episodeId: job.episodeId, command: 'interrupt', seq: 2, eventIds: [late.id] });
    await h.control({ episodeId: job.episodeId, command: 'interrupt', seq: 3, eventIds: [late.id, later.id] });
    expect(await h.finished(job)).toMatchObject({ outcome: 'replied', steps: 2 });
    // The turn is the first of the messages that came meanwhile; the reply takes in the sender's next ones too.
    const second = promptText(plannerRequests()[1]!.body);
    expect(second).toContain(`这次轮到你处理的是 [msg_id]${late.payload.messageId} 这条消息`);
    const current = promptText(replyerRequests()[1]!.body).split('【当前消息】')[1] ?? '';
    expect(current).toContain('那下雨呢');
    expect(current).toContain('我没带伞');
    const sends = await h.payloads<ActionSendPayload>(job.episodeId, EventKind.ActionSend);
    expect(sends.map((p) => p.text)).toEqual(['去爬山吧', '下雨就去逛商场']);
    // Each send names what the replies covered so far; the completion names all of it.
    expect(sends.map((p) => p.answeredEventIds)).toEqual([[trigger.id], [trigger.id, late.id, later.id]]);
    const [completed] = await h.payloads<EpisodeCompletedPayload>(job.episodeId, EventKind.EpisodeCompleted);
    expect(completed!.answeredEventIds).toEqual([trigger.id, late.id, later.id]);
  });

  it('names on its send and its completion the messages its replies covered, and only those', async () => {
    const sender = { userId: '20011', displayName: '阿青', nickname: '阿青' };
    const first = await h.message('小满 问个事', { direct: true, sender });
    const trigger = await h.message('明天几点集合', { direct: true, sender });
    const bystander = await h.message('我也想知道', {
      sender: { userId: '20012', displayName: '阿白', nickname: '阿白' },
    });
    h.double.push(
      call('reply', { msg_id: trigger.payload.messageId, intent: '告诉他时间' }, '回阿青'),
      forReplyer({ kind: 'content', content: '八点，校门口' }),
    );
    const job = EpisodeJob.create({
      ...h.startJob(trigger, [contextOf(bystander)]),
      fragments: [first],
    });
    expect(await h.run(job)).toMatchObject({ outcome: 'replied' });
    const [send] = await h.payloads<ActionSendPayload>(job.episodeId, EventKind.ActionSend);
    expect(send!.answeredEventIds).toEqual([trigger.id, first.id]);
    const [completed] = await h.payloads<EpisodeCompletedPayload>(job.episodeId, EventKind.EpisodeCompleted);
    // The bystander's line was context, not answered: the scheduler decides what the replies did not cover again.
    expect(completed!.answeredEventIds).toEqual([trigger.id, first.id]);
  });

  it('names no answered messages when it chose not to reply', async () => {
    const trigger = await h.message('小满 嗯', { direct: true });
    h.double.push(call('no_action', { reason: '没什么可说的' }));
    const job = h.startJob(trigger);
    expect(await h.run(job)).toMatchObject({ outcome: 'no_reply' });
    const [completed] = await h.payloads<EpisodeCompletedPayload>(job.episodeId, EventKind.EpisodeCompleted);
    expect(completed).not.toHaveProperty('answeredEventIds');
  });

  it('ends after its reply when nothing new came meanwhile', async () => {
    const trigger = await h.message('小满 早', { direct: true });
    h.double.push(
      call('reply', { msg_id: trigger.payload.messageId, intent: '问好' }),
      forReplyer({ kind: 'content', content: '早呀' }),
    );
    expect(await h.run(h.startJob(trigger))).toMatchObject({ outcome: 'replied', steps: 1 });
    expect(plannerRequests()).toHaveLength(1);
  });

  it('stops aborting after the cap of consecutive interrupts and merges after the call instead', async () => {
    const trigger = await h.message('小满 出来玩吗', { direct: true });
    h.double.push(forPlanner({ kind: 'hang' }), forPlanner({ kind: 'hang' }), {
      ...call('no_action', { reason: '不想出去' }),
      latencyMs: 1500,
    });
    const job = h.startJob(trigger);
    await h.enqueue(job);
    const extra = [] as string[];
    for (let seq = 2; seq <= 3; seq++) {
      await h.double.waitForRequests(seq - 1);
      const m = await h.message(`插话${seq}`);
      extra.push(m.id);
      await h.control({ episodeId: job.episodeId, command: 'interrupt', seq, eventIds: [m.id] });
    }
    // Third planner call: interrupts are capped (2), so a fourth message waits for this call to finish.
    await h.double.waitForRequests(3);
    const m = await h.message('插话4');
    await h.control({ episodeId: job.episodeId, command: 'interrupt', seq: 4, eventIds: [m.id] });
    const result = await h.finished(job);
    expect(result).toMatchObject({ outcome: 'no_reply' });
    expect(plannerRequests().map((r) => r.aborted)).toEqual([true, true, false]);
  });

  it('replaces a thought that repeats the previous one with the reflection prompt', async () => {
    const off = h.register(testTool({ name: 'look_around', description: '看看群里' }));
    const trigger = await h.message('小满 说点啥', { direct: true });
    h.double.push(
      call('look_around', {}, '我想想该怎么接这句话'),
      call('look_around', {}, '我想想该怎么接这句话。'),
      call('no_action', {}),
    );
    const job = h.startJob(trigger);
    expect(await h.run(job)).toMatchObject({ outcome: 'no_reply' });
    off();
    // Tools ran, nothing was sent: the episode has not answered anyone.
    expect(await h.redis.exists(h.keys.episodeActed(h.keys.partitionOf(GROUP), job.episodeId))).toBe(0);
    const third = plannerRequests()[2]!.body!;
    const assistant = (third.messages ?? []).filter((m) => m.role === 'assistant').map((m) => m.content);
    expect(assistant).toEqual(['我想想该怎么接这句话', REFLECTION_PROMPT]);
    const steps = await h.payloads<EpisodeStepPayload>(job.episodeId, EventKind.EpisodeStep);
    expect(steps[1]!.thought).toBe(REFLECTION_PROMPT);
  });

  it('finds a deferred tool through tool_search and uses it in the next step', async () => {
    const lucky = testTool({ name: 'lucky_number', description: '算今天的幸运数字', visibility: 'deferred' }, () => ({
      ok: true,
      text: '今天的幸运数字是 7',
    }));
    const off = h.register(lucky);
    const trigger = await h.message('小满 我今天幸运数字是几', { direct: true });
    h.double.push(
      call('tool_search', { query: '幸运数字' }),
      call('lucky_number', {}),
      call('reply', { msg_id: trigger.payload.messageId }),
      forReplyer({ kind: 'content', content: '是 7 哦' }),
    );
    const job = h.startJob(trigger);
    expect(await h.run(job)).toMatchObject({ outcome: 'replied', steps: 3 });
    off();
    const [first, second] = plannerRequests();
    expect(offeredTools(first!.body)).not.toContain('lucky_number');
    expect(offeredTools(first!.body)).toContain('tool_search');
    expect(offeredTools(second!.body)).toContain('lucky_number');
    expect(promptText(second!.body)).toContain('lucky_number：算今天的幸运数字');
    expect(lucky.calls).toHaveLength(1);
  });

  it('lets a hook rewrite the reply, and stops when it is unregistered', async () => {
    const off = h.hooks.register({
      name: 'replyer.after_response',
      source: 'test',
      handler: (payload) => ({ text: `${payload.text}～（已润色）` }),
    });
    const first = await h.message('小满 早', { direct: true });
    h.double.push(forReplyer({ kind: 'content', content: '早呀' }));
    const job = h.startJob(first);
    expect(await h.run(job)).toMatchObject({ outcome: 'replied' });
    off();
    const second = await h.message('小满 晚安', { direct: true });
    h.double.push(forReplyer({ kind: 'content', content: '晚安' }));
    const job2 = h.startJob(second);
    expect(await h.run(job2)).toMatchObject({ outcome: 'replied' });
    expect((await h.payloads<ActionSendPayload>(job.episodeId, EventKind.ActionSend))[0]!.text).toBe(
      '早呀～（已润色）',
    );
    expect((await h.payloads<ActionSendPayload>(job2.episodeId, EventKind.ActionSend))[0]!.text).toBe('晚安');
  });

  it('waits on a durable timer, then resumes on a new job with the messages that came meanwhile', async () => {
    const trigger = await h.message('小满 等下我问个事', { direct: true });
    h.double.push(call('wait', { seconds: 30 }, '他还没说完，等等'));
    const job = h.startJob(trigger);
    const parked = await h.run(job);
    expect(parked).toMatchObject({ outcome: 'waiting', steps: 1 });
    const [waiting] = await h.payloads<{ cause: string; resumeAt: string; step: number }>(
      job.episodeId,
      EventKind.EpisodeWaiting,
    );
    expect(waiting).toMatchObject({ cause: 'wait', step: 0 });
    expect(Date.parse(waiting!.resumeAt) - Date.now()).toBeGreaterThan(20_000);

    // Meanwhile (the scheduler's part): a message arrives, the timer fires, resume is sent and the job enqueued.
    const meanwhile = await h.message('就是明天的作业交了吗', {
      sender: { userId: '20001', displayName: 'Alice', nickname: 'Alice' },
    });
    h.double.push(
      call('reply', { msg_id: meanwhile.payload.messageId }),
      forReplyer({ kind: 'content', content: '还没呢，周五交' }),
    );
    await h.control({ episodeId: job.episodeId, command: 'resume', seq: 2, cause: 'timer', timerId: 't1' });
    const resume = h.resumeJob(job, 2, { cause: 'timer', timerId: 't1', eventId: 'timer-event-1' }, [
      contextOf(meanwhile),
    ]);
    const result = await h.run(resume);
    expect(result).toMatchObject({ outcome: 'replied', steps: 2 });
    const resumed = promptText(plannerRequests()[1]!.body);
    expect(resumed).toContain('[发言内容]就是明天的作业交了吗');
    expect(resumed).toContain('已经等了 30 秒');
    // A redelivered resume job does nothing.
    const again = await h.run({ ...resume, controlSeq: 3 });
    expect(again.outcome).toBe('duplicate');
    expect(await h.payloads(job.episodeId, EventKind.ActionSend)).toHaveLength(1);
  });

  it('parks on an asynchronous tool and continues on any worker with its tool.result', async () => {
    const render = testTool({
      name: 'render_poster',
      description: '做一张海报',
      asynchronous: true,
      timeoutMs: 60_000,
    });
    const off = h.register(render);
    const trigger = await h.message('小满 帮我做张海报', { direct: true });
    h.double.push(call('render_poster', { title: '社团招新' }));
    const job = h.startJob(trigger);
    expect(await h.run(job)).toMatchObject({ outcome: 'waiting' });
    const [waiting] = await h.payloads<{ cause: string; toolCallId: string; timeoutAt: string }>(
      job.episodeId,
      EventKind.EpisodeWaiting,
    );
    expect(waiting).toMatchObject({ cause: 'tool' });
    expect(render.calls).toEqual([{ title: '社团招新' }]);

    // The tool finishes elsewhere: its tool.result goes to the log, the scheduler resumes the episode.
    const { makeEvent } = await import('@app/contracts');
    const result = makeEvent({
      kind: EventKind.ToolResult,
      groupId: '30001',
      payload: {
        episodeId: job.episodeId,
        toolCallId: waiting!.toolCallId,
        tool: 'render_poster',
        ok: true,
        text: '海报做好了：poster-1.png',
        latencyMs: 1200,
      },
      source: 'tools',
    });
    await h.redis.xadd(h.keys.stream(h.keys.partitionOf('30001')), '*', 'k', result.kind, 'e', JSON.stringify(result));
    h.double.push(
      call('reply', { msg_id: trigger.payload.messageId }),
      forReplyer({ kind: 'content', content: '做好啦' }),
    );
    await h.control({
      episodeId: job.episodeId,
      command: 'resume',
      seq: 2,
      cause: 'tool_result',
      toolCallId: waiting!.toolCallId,
    });
    const resumed = await h.run(
      h.resumeJob(job, 2, { cause: 'tool_result', toolCallId: waiting!.toolCallId, eventId: result.id }),
    );
    off();
    expect(resumed).toMatchObject({ outcome: 'replied' });
    expect(promptText(plannerRequests()[1]!.body)).toContain('海报做好了：poster-1.png');
  });

  it('never acts after a cancel, even one that arrives while it thinks', async () => {
    const trigger = await h.message('小满 算了', { direct: true });
    h.double.push(forPlanner({ kind: 'hang' }));
    const job = h.startJob(trigger);
    await h.enqueue(job);
    await h.double.waitForRequests(1);
    h.double.push(call('reply', { msg_id: trigger.payload.messageId }));
    await h.control({ episodeId: job.episodeId, command: 'cancel', seq: 2, reason: 'recalled' });
    const result = await h.finished(job);
    expect(result).toMatchObject({ outcome: 'cancelled', endedBy: 'cancelled' });
    expect(await h.payloads(job.episodeId, EventKind.ActionSend)).toHaveLength(0);
    // A redelivery of the same job does nothing.
    const again = await h.run({
      ...job,
      controlSeq: 9,
      mode: 'resume',
      resume: { cause: 'timer', eventId: 'x' },
    });
    expect(again.outcome).toBe('duplicate');
  });
});

describe('builtins and confirmation', () => {
  it('opens a merged-forward message of the conversation through get_forward_msg', async () => {
    const trigger = await h.message('小满 看看这个', {
      direct: true,
      segments: [{ type: 'forward', data: { id: 'fwd-777' } }],
    });
    h.double.push(
      call('view_complex_message', { msg_id: trigger.payload.messageId }),
      call('view_complex_message', { msg_id: '424242' }),
      call('no_action', {}),
    );
    const job = h.startJob(trigger);
    expect(await h.run(job)).toMatchObject({ outcome: 'no_reply' });
    expect(onebotCalls).toEqual([{ action: 'get_forward_msg', params: { id: 'fwd-777', message_id: 'fwd-777' } }]);
    expect(promptText(plannerRequests()[1]!.body)).toContain('某人：[表情]哈喽～');
    // A message it has not seen is not opened.
    expect(promptText(plannerRequests()[2]!.body)).toContain('不是这里的合并转发消息');
  });

  it('sends a sticker from the configured set as an image segment', async () => {
    const trigger = await h.message('小满 哈哈哈', { direct: true });
    h.double.push(call('send_emoji', { sticker: 'cat_nod' }), call('finish', {}));
    const job = h.startJob(trigger);
    expect(await h.run(job)).toMatchObject({ outcome: 'replied' });
    expect(offeredTools(plannerRequests()[0]!.body)).toContain('send_emoji');
    const [send] = await h.payloads<ActionSendPayload>(job.episodeId, EventKind.ActionSend);
    expect(send).toMatchObject({
      targetId: '30001',
      text: '[表情：猫猫点头]',
      segments: [{ type: 'image', data: { file: 'https://example.invalid/nod.png' } }],
      // A sticker answers no message by itself.
      answeredEventIds: [],
    });
    const [completed] = await h.payloads<EpisodeCompletedPayload>(job.episodeId, EventKind.EpisodeCompleted);
    expect(completed!.answeredEventIds).toEqual([]);
  });

  it('runs a dangerous tool only after the sender confirms in a later message', async () => {
    const wipe = testTool({
      name: 'clear_notes',
      description: '清空笔记',
      requiresConfirmation: true,
      sideEffect: true,
      idempotent: false,
    });
    const off = h.register(wipe);
    const ask = await h.message('小满 把笔记清空', { direct: true });
    h.double.push(
      call('clear_notes', { all: true }),
      call('reply', { msg_id: ask.payload.messageId }),
      forReplyer({ kind: 'content', content: '确定要清空吗？' }),
    );
    await h.run(h.startJob(ask));
    expect(wipe.calls).toHaveLength(0);
    expect(promptText(plannerRequests()[1]!.body)).toContain('需要 Alice 先确认');
    // Someone else saying yes does not count.
    const other = await h.message('确认', { sender: { userId: '20002', displayName: '阿强', nickname: '阿强' } });
    h.double.push(call('clear_notes', { all: true }), call('no_action', {}));
    await h.run(h.startJob(other));
    expect(wipe.calls).toHaveLength(0);
    const yes = await h.message('确认', { direct: true });
    h.double.push(call('clear_notes', { all: true }), call('no_action', {}));
    await h.run(h.startJob(yes));
    off();
    expect(wipe.calls).toEqual([{ all: true }]);
  });
});

async function until(probe: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
