import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  actionIdFor,
  episodeIdFor,
  EventKind,
  Keyspace,
  makeEvent,
  PRIORITY,
  type ContextMessage,
  type EpisodeJob,
  type EpisodeStepPayload,
  type EventEnvelope,
  type MessagePayload,
} from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { loadPersona } from '@app/persona';
import { Clock, Metrics, type QunliConfig } from '@app/platform';
import { deleteKeys, testConfig, testRedis, TEST_REDIS_URL, uniquePrefix, LlmDouble } from '@app/testing';
import type { ChatModel } from '@app/llm';
import { OfflineResponder } from '@app/llm';
import { OpenAiChatClient } from '@app/llm';
import { EpisodeRunner } from './episode.runner.js';

const persona = loadPersona(join(import.meta.dirname, '../../../../personas/default.yaml'));
const GROUP = '30001';

let redis: Redis;
let double: LlmDouble;
let prefix: string;
let config: QunliConfig;
let keys: Keyspace;
let metrics: Metrics;
let eventLog: EventLog;
let runner: EpisodeRunner;

function runnerWith(model: ChatModel, cfg: QunliConfig = config): EpisodeRunner {
  return new EpisodeRunner(model, eventLog, redis, cfg, persona, new Clock(1), metrics);
}

let messageSeq = 0;

function job(
  text = '小满晚上吃啥',
  options: { groupId?: string | null; deadlineMs?: number; context?: ContextMessage[] } = {},
): EpisodeJob {
  const groupId = options.groupId === undefined ? GROUP : options.groupId;
  messageSeq += 1;
  const payload: MessagePayload = {
    messageType: groupId === null ? 'private' : 'group',
    selfId: '10001',
    messageId: String(7000 + messageSeq),
    ...(groupId === null ? {} : { groupName: '摸鱼研究所' }),
    sender: { userId: '20001', nickname: 'zhen', card: '', displayName: 'zhen', role: 'member' },
    segments: [{ type: 'text', data: { text } }],
    text,
    truncated: false,
    mentionsSelf: groupId !== null,
    directReason: groupId === null ? 'private' : 'at',
    sentAt: Math.floor(Date.now() / 1000),
  };
  const trigger = makeEvent({
    kind: EventKind.MessageDirect,
    groupId,
    payload,
    source: 'ingress',
    priority: PRIORITY.direct,
  });
  return {
    episodeId: episodeIdFor(trigger.id),
    groupId,
    trigger,
    context: options.context ?? [
      {
        eventId: 'e-1',
        messageId: '6999',
        userId: '20002',
        displayName: '阿强',
        text: '好饿啊',
        sentAt: payload.sentAt - 30,
        fromSelf: false,
      },
    ],
    deadline: new Date(Date.now() + (options.deadlineMs ?? 60_000)).toISOString(),
  };
}

/** Every event of the episode's chain in its partition stream, in log order. */
async function chain(j: EpisodeJob): Promise<EventEnvelope[]> {
  const entries = await redis.xrange(keys.stream(keys.partitionOf(j.groupId)), '-', '+');
  return entries
    .map(([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope)
    .filter((e) => e.correlationId === j.trigger.correlationId);
}

function payloadOf<T>(events: EventEnvelope[], kind: string): T[] {
  return events.filter((e) => e.kind === kind).map((e) => e.payload as T);
}

beforeAll(async () => {
  redis = testRedis();
  double = await LlmDouble.start();
  prefix = uniquePrefix('cognition');
  config = testConfig('cognition', {
    REDIS_URL: TEST_REDIS_URL,
    QUNLI_REDIS_PREFIX: prefix,
    OPENAI_BASE_URL: double.baseUrl,
    OPENAI_API_KEY: 'test-key',
    QUNLI_MODEL_REPLYER: 'double-replyer',
  });
  keys = new Keyspace(prefix, config.QUNLI_PARTITIONS);
  metrics = new Metrics('cognition', false);
  eventLog = new EventLog(redis, keys, metrics);
  runner = runnerWith(new OpenAiChatClient(config));
});

afterAll(async () => {
  await deleteKeys(redis, prefix);
  await double.close();
  redis.disconnect();
});

beforeEach(() => {
  double.requests.length = 0;
});

describe('episode runner', () => {
  it('turns an episode job into started, step, send and completed events, and does nothing the second time', async () => {
    const j = job();
    const result = await runner.run(j, 1);
    expect(result).toMatchObject({ outcome: 'replied', steps: 1, actionId: actionIdFor(j.episodeId, 0) });

    const events = await chain(j);
    expect(events.map((e) => e.kind)).toEqual([
      EventKind.EpisodeStarted,
      EventKind.EpisodeStep,
      EventKind.ActionSend,
      EventKind.EpisodeCompleted,
    ]);
    expect(events.every((e) => e.groupId === GROUP && e.causationId === j.trigger.id)).toBe(true);
    expect(payloadOf(events, EventKind.EpisodeStarted)[0]).toMatchObject({
      episodeId: j.episodeId,
      triggerEventId: j.trigger.id,
      model: 'double-replyer',
      maxSteps: 3,
      attempt: 1,
    });
    expect(payloadOf(events, EventKind.EpisodeStep)[0]).toMatchObject({
      index: 0,
      action: { type: 'reply', args: { text: '收到：小满晚上吃啥' } },
      observation: { ok: true },
    });
    expect(payloadOf(events, EventKind.ActionSend)[0]).toEqual({
      actionId: actionIdFor(j.episodeId, 0),
      episodeId: j.episodeId,
      triggerEventId: j.trigger.id,
      targetType: 'group',
      targetId: GROUP,
      text: '收到：小满晚上吃啥',
    });
    const completed = payloadOf<Record<string, unknown>>(events, EventKind.EpisodeCompleted)[0]!;
    expect(completed).toMatchObject({ outcome: 'replied', steps: 1 });
    expect(completed.tokensIn).toBeGreaterThan(0);

    const [request] = double.completionRequests;
    expect(double.completionRequests).toHaveLength(1);
    expect(request!.headers.authorization).toBe('Bearer test-key');
    expect(request!.body).toMatchObject({ model: 'double-replyer', tool_choice: 'required' });
    expect(request!.body!.tools!.map((t) => t.function?.name)).toEqual(['reply', 'no_reply']);
    const prompt = request!.body!.messages!.map((m) => String(m.content)).join('\n');
    expect(prompt).toContain('【当前消息】');
    expect(prompt).toContain('阿强(20002): 好饿啊');

    const again = await runner.run(j, 2);
    expect(again.outcome).toBe('duplicate');
    expect(await chain(j)).toHaveLength(4);
    expect(double.completionRequests).toHaveLength(1);
  });

  it('quotes the trigger when the model asks to', async () => {
    const j = job('你说呢');
    double.nextToolCall('reply', { text: '我觉得可以', quote: true });
    await runner.run(j, 1);
    const [send] = payloadOf(await chain(j), EventKind.ActionSend);
    expect(send).toMatchObject({ text: '我觉得可以', quoteMessageId: j.trigger.payload.messageId });
  });

  it('answers a private message to its sender', async () => {
    const j = job('在吗', { groupId: null });
    await runner.run(j, 1);
    const [send] = payloadOf(await chain(j), EventKind.ActionSend);
    expect(send).toMatchObject({ targetType: 'private', targetId: '20001' });
  });

  it('corrects malformed tool arguments and replies on the second step', async () => {
    const j = job();
    double.nextToolArguments('{"text": "半截');
    const result = await runner.run(j, 1);
    expect(result).toMatchObject({ outcome: 'replied', steps: 2, actionId: actionIdFor(j.episodeId, 1) });

    const events = await chain(j);
    const steps = payloadOf<EpisodeStepPayload>(events, EventKind.EpisodeStep);
    expect(steps.map((s) => s.observation?.ok)).toEqual([false, true]);
    expect(steps[0]).toMatchObject({
      index: 0,
      action: { type: 'reply', args: { raw: '{"text": "半截' } },
      observation: { errorCode: 'EPISODE.INVALID_TOOL_CALL' },
    });
    expect(payloadOf(events, EventKind.ActionSend)[0]).toMatchObject({ actionId: actionIdFor(j.episodeId, 1) });

    const retry = double.completionRequests[1]!.body!.messages!;
    expect(String(retry[retry.length - 1]!.content)).toContain('reply 的参数不是合法的 JSON 对象');
  });

  it('gives up as failed after three unusable answers', async () => {
    const j = job();
    double.nextToolCall('send_emoji', {}).nextToolArguments('{}').nextContent('');
    const result = await runner.run(j, 1);
    expect(result).toMatchObject({ outcome: 'failed', steps: 3, error: { code: 'EPISODE.INVALID_TOOL_CALL' } });
    const events = await chain(j);
    expect(payloadOf(events, EventKind.ActionSend)).toEqual([]);
    expect(payloadOf(events, EventKind.EpisodeCompleted)[0]).toMatchObject({
      outcome: 'failed',
      steps: 3,
      error: { code: 'EPISODE.INVALID_TOOL_CALL' },
    });
  });

  it('takes plain text without a tool call as the reply', async () => {
    const j = job();
    double.nextContent('哈哈哈好啊');
    await runner.run(j, 1);
    expect(payloadOf(await chain(j), EventKind.ActionSend)[0]).toMatchObject({ text: '哈哈哈好啊' });
  });

  it('records no_reply without a send', async () => {
    const j = job();
    double.nextToolCall('no_reply', { reason: '在跟别人说话' });
    const result = await runner.run(j, 1);
    expect(result.outcome).toBe('no_reply');
    const events = await chain(j);
    expect(events.map((e) => e.kind)).toEqual([
      EventKind.EpisodeStarted,
      EventKind.EpisodeStep,
      EventKind.EpisodeCompleted,
    ]);
  });

  it('fails with LLM.HTTP_ERROR when the API answers 500 twice, and completes the episode', async () => {
    const j = job();
    double.failNext(2, 500);
    const result = await runner.run(j, 1);
    expect(result).toMatchObject({ outcome: 'failed', error: { code: 'LLM.HTTP_ERROR' } });
    expect(double.completionRequests.map((r) => r.status)).toEqual([500, 500]);

    const events = await chain(j);
    expect(events.map((e) => e.kind)).toEqual([
      EventKind.EpisodeStarted,
      EventKind.EpisodeStep,
      EventKind.EpisodeCompleted,
    ]);
    expect(payloadOf(events, EventKind.EpisodeCompleted)[0]).toMatchObject({
      outcome: 'failed',
      error: { code: 'LLM.HTTP_ERROR' },
    });
    expect((await runner.run(j, 2)).outcome).toBe('duplicate');
  });

  it('fails with EPISODE.DEADLINE_EXCEEDED when the model is slower than the deadline', async () => {
    const j = job('慢一点', { deadlineMs: 300 });
    double.latencyMs = 3000;
    try {
      const result = await runner.run(j, 1);
      expect(result).toMatchObject({ outcome: 'failed', error: { code: 'EPISODE.DEADLINE_EXCEEDED' } });
    } finally {
      double.latencyMs = 0;
    }
    expect(payloadOf(await chain(j), EventKind.ActionSend)).toEqual([]);
  });

  it('does not call the model when the deadline has already passed', async () => {
    const j = job('过时了', { deadlineMs: -1000 });
    const result = await runner.run(j, 1);
    expect(result).toMatchObject({ outcome: 'failed', steps: 0, error: { code: 'EPISODE.DEADLINE_EXCEEDED' } });
    expect(double.completionRequests).toHaveLength(0);
  });

  it('replies through the offline responder without any HTTP', async () => {
    const offlineConfig = testConfig('cognition', { REDIS_URL: TEST_REDIS_URL, QUNLI_REDIS_PREFIX: prefix });
    expect(offlineConfig.llmOffline).toBe(true);
    const offline = runnerWith(new OfflineResponder(), offlineConfig);
    const j = job('今天天气怎么样');
    const result = await offline.run(j, 1);
    expect(result.outcome).toBe('replied');
    const [send] = payloadOf<{ text: string }>(await chain(j), EventKind.ActionSend);
    expect(send!.text).toBe(
      '（离线模式）收到「今天天气怎么样」。我还没接上语言模型，配置 OPENAI_API_KEY 后就能正常聊天啦。',
    );
    expect(double.requests).toHaveLength(0);
  });

  it('throws when Redis is unreachable, so BullMQ retries the job', async () => {
    // Never connected and refusing to queue: every command fails at once, as with Redis down.
    const down = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false });
    const broken = new EpisodeRunner(
      new OfflineResponder(),
      new EventLog(down, keys, metrics),
      down,
      config,
      persona,
      new Clock(1),
      metrics,
    );
    await expect(broken.run(job(), 1)).rejects.toThrow();
    down.disconnect();
  });

  it('counts episodes, steps, LLM calls and tokens', async () => {
    const text = await metrics.scrape();
    expect(text).toMatch(/qunli_episodes_total\{outcome="replied",app="cognition"\} [1-9]/);
    expect(text).toMatch(/qunli_episodes_total\{outcome="failed",app="cognition"\} [1-9]/);
    expect(text).toMatch(
      /qunli_llm_calls_total\{role="replyer",model="double-replyer",outcome="LLM.HTTP_ERROR",app="cognition"\} 1/,
    );
    expect(text).toMatch(
      /qunli_llm_tokens_total\{role="replyer",model="double-replyer",direction="in",app="cognition"\} [1-9]/,
    );
    expect(text).toMatch(/qunli_episode_invalid_tool_calls_total\{reason="bad_json",app="cognition"\} [1-9]/);
    expect(text).toMatch(/qunli_episode_redeliveries_total\{app="cognition"\} 2/);
    expect(text).toContain('qunli_episode_duration_seconds_bucket{le="600"');
  });
});
