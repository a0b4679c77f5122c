import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  actionIdFor,
  ConsumerGroup,
  envelopeErrors,
  episodeIdFor,
  EventKind,
  Keyspace,
  makeEvent,
  newEventId,
  type EventEnvelope,
  type MessageSentPayload,
  type SendProblemPayload,
} from '@app/contracts';
import { StreamContext } from '@app/event-bus';
import { OneBotHttpApi } from '@app/onebot';
import { Metrics, QunliConfig } from '@app/platform';
import { deleteKeys, FakeOneBot, testRedis, uniquePrefix } from '@app/testing';
import { SendBackoff } from './send-backoff.js';
import { SendLedger } from './send-ledger.repository.js';
import { SendConsumer } from './send.consumer.js';

const GROUP = '30001';

/** Records waits instead of sleeping, and lets a test act during one (bring the peer up). */
class ScriptedBackoff extends SendBackoff {
  readonly waits: number[] = [];
  during?: (attempt: number) => Promise<void>;
  override async wait(delayMs: number, attempt: number): Promise<void> {
    this.waits.push(delayMs);
    await this.during?.(attempt);
  }
}

function actionEvent(text: string, extra: { quoteMessageId?: string; targetType?: 'group' | 'private' } = {}) {
  const triggerEventId = newEventId();
  const episodeId = episodeIdFor(triggerEventId);
  const targetType = extra.targetType ?? 'group';
  return makeEvent({
    kind: EventKind.ActionSend,
    groupId: targetType === 'group' ? GROUP : null,
    source: 'cognition',
    payload: {
      actionId: actionIdFor(episodeId, 0),
      episodeId,
      triggerEventId,
      targetType,
      targetId: targetType === 'group' ? GROUP : '20001',
      text,
      ...(extra.quoteMessageId !== undefined && { quoteMessageId: extra.quoteMessageId }),
    },
  });
}

describe('SendConsumer (real Redis, NapCat-like peer)', () => {
  let redis: Redis;
  let prefix: string;
  let keys: Keyspace;
  let fake: FakeOneBot;
  let api: OneBotHttpApi;
  let ledger: SendLedger;
  let backoff: ScriptedBackoff;
  let metrics: Metrics;
  let consumer: SendConsumer;

  const config = Object.assign(new QunliConfig(), { QUNLI_SEND_MAX_SEGMENT_CHARS: 30, QUNLI_SEND_MAX_ATTEMPTS: 3 });

  function build(baseUrl: string): void {
    api = new OneBotHttpApi({ baseUrl, timeoutMs: 2000 });
    metrics = new Metrics('outbound', false);
    backoff = new ScriptedBackoff();
    consumer = new SendConsumer(ledger, api, config, backoff, metrics);
  }

  /** Handle one delivery of `event` the way the stream transport does; returns what the handler staged. */
  async function deliver(event: EventEnvelope, deliveries = 1): Promise<StreamContext> {
    const ctx = new StreamContext(ConsumerGroup.Outbound, keys.partitionOf(event.groupId), '1-0', deliveries, keys);
    await consumer.onActionSend(event as never, ctx);
    for (const published of ctx.published) expect(envelopeErrors(published)).toEqual([]);
    return ctx;
  }

  async function ledgerOf(event: ReturnType<typeof actionEvent>, segment: number): Promise<Record<string, unknown>> {
    const raw = await redis.hget(
      keys.sendLedger(keys.partitionOf(event.groupId)),
      `${event.payload.actionId}:${segment}`,
    );
    return JSON.parse(raw ?? 'null') as Record<string, unknown>;
  }

  /** The value of one sample, labels matched as a subset (the registry adds `app`). */
  async function sample(name: string, labels: Record<string, string> = {}): Promise<number> {
    const line = (await metrics.scrape())
      .split('\n')
      .find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  }

  beforeAll(() => {
    Logger.overrideLogger(false);
    redis = testRedis();
  });

  beforeEach(async () => {
    prefix = uniquePrefix('outbound');
    keys = new Keyspace(prefix, 4);
    ledger = new SendLedger(redis, keys);
    fake = new FakeOneBot({ selfId: '10001' });
    build(await fake.start());
  });

  afterEach(async () => {
    await api.close();
    await fake.stop();
    await deleteKeys(redis, prefix);
  });

  afterAll(async () => {
    await redis.quit();
  });

  it('sends one action as one send_group_msg and stages one message.sent with the OneBot message id', async () => {
    const event = actionEvent('你好，我在呢', { quoteMessageId: '2096329721' });
    const ctx = await deliver(event);
    expect(fake.sentMessages.map((m) => [m.action, m.groupId, m.text, m.replyTo])).toEqual([
      ['send_group_msg', GROUP, '你好，我在呢', '2096329721'],
    ]);
    expect(ctx.published.map((e) => e.kind)).toEqual([EventKind.MessageSent]);
    const sent = ctx.published[0]!;
    expect(sent).toMatchObject({ groupId: GROUP, source: 'outbound', causationId: event.id });
    expect(sent.payload).toMatchObject({
      actionId: event.payload.actionId,
      segmentIndex: 0,
      segmentCount: 1,
      text: '你好，我在呢',
      attempts: 1,
      onebotMessageId: String(fake.sentMessages[0]!.messageId),
    });
    expect(await ledgerOf(event, 0)).toMatchObject({ state: 'sent', attempts: 1 });
    expect(await sample('qunli_sends_total', { outcome: 'sent' })).toBe(1);
  });

  it('does not call the API again for a redelivered action, and re-publishes its message.sent from the ledger', async () => {
    const event = actionEvent('只说一次');
    const first = await deliver(event);
    const again = await deliver(event, 2);
    expect(fake.calls).toHaveLength(1);
    expect(again.published.map((e) => e.payload)).toEqual(first.published.map((e) => e.payload));
    expect(await sample('qunli_sends_total', { outcome: 'skipped_duplicate' })).toBe(1);
    expect(await sample('qunli_sends_total', { outcome: 'sent' })).toBe(1);
  });

  it('turns a segment found in `sending` (a crash mid-call) into send.unknown without calling the API', async () => {
    const event = actionEvent('崩溃前发出去了吗');
    await ledger.write(keys.partitionOf(GROUP), event.payload.actionId, 0, {
      state: 'sending',
      attempts: 1,
      at: new Date().toISOString(),
    });
    const ctx = await deliver(event, 2);
    expect(fake.calls).toHaveLength(0);
    expect(ctx.published.map((e) => e.kind)).toEqual([EventKind.SendUnknown]);
    expect((ctx.published[0]!.payload as SendProblemPayload).error.code).toBe('SEND.INTERRUPTED');
    expect(await ledgerOf(event, 0)).toMatchObject({ state: 'unknown' });

    const later = await deliver(event, 3);
    expect(fake.calls).toHaveLength(0);
    expect(later.published.map((e) => e.kind)).toEqual([EventKind.SendUnknown]);
  });

  it('records a NapCat 1200 timeout as unknown and never retries it', async () => {
    fake.failNext(1, 1200);
    const event = actionEvent('风控了吗');
    const ctx = await deliver(event);
    expect(fake.calls).toHaveLength(1);
    expect(ctx.published.map((e) => e.kind)).toEqual([EventKind.SendUnknown]);
    expect(ctx.published[0]!.payload).toMatchObject({ retcode: 1200, error: { code: 'ONEBOT.TIMEOUT' }, attempts: 1 });
    expect(backoff.waits).toEqual([]);
    await deliver(event, 2);
    expect(fake.calls).toHaveLength(1);
  });

  it('retries while the implementation is unreachable, and sends once it is up', async () => {
    const port = fake.port;
    await fake.stop();
    const revived = new FakeOneBot({ port, selfId: '10001' });
    backoff.during = async (attempt) => {
      if (attempt === 1) await revived.start();
    };
    try {
      const ctx = await deliver(actionEvent('终于连上了'));
      expect(backoff.waits).toEqual([250]);
      expect(revived.sentMessages.map((m) => m.text)).toEqual(['终于连上了']);
      expect(ctx.published.map((e) => e.kind)).toEqual([EventKind.MessageSent]);
      expect((ctx.published[0]!.payload as MessageSentPayload).attempts).toBe(2);
      expect(await sample('qunli_send_retries_total')).toBe(1);
    } finally {
      await revived.stop();
    }
  });

  it('gives up as send.failed after the last attempt when the implementation stays unreachable', async () => {
    await fake.stop();
    const event = actionEvent('没人接');
    const ctx = await deliver(event);
    expect(backoff.waits).toEqual([250, 500]);
    expect(ctx.published.map((e) => e.kind)).toEqual([EventKind.SendFailed]);
    expect(ctx.published[0]!.payload).toMatchObject({ attempts: 3, error: { code: 'SEND.UNREACHABLE' } });
    expect(await ledgerOf(event, 0)).toMatchObject({ state: 'failed', attempts: 3 });
  });

  it('sends a long reply as several messages in order, quoting only in the first', async () => {
    const lines = [
      '第一段话在这里说得比较长一些吧。',
      '第二段话也差不多是这么长的呢。',
      '第三段话就是最后一段了真的是最后。',
    ];
    const event = actionEvent(lines.join('\n'), { quoteMessageId: '777' });
    const ctx = await deliver(event);
    expect(fake.sentMessages.map((m) => m.text)).toEqual(lines);
    expect(fake.sentMessages.map((m) => m.replyTo)).toEqual(['777', undefined, undefined]);
    expect(ctx.published.map((e) => [e.kind, (e.payload as MessageSentPayload).segmentIndex])).toEqual([
      [EventKind.MessageSent, 0],
      [EventKind.MessageSent, 1],
      [EventKind.MessageSent, 2],
    ]);
    expect(ctx.published.map((e) => (e.payload as MessageSentPayload).onebotMessageId)).toEqual(
      fake.sentMessages.map((m) => String(m.messageId)),
    );
  });

  it('stops an action at a refused segment: later segments are not sent', async () => {
    fake.failNext(1, 1400);
    const event = actionEvent(['第一段话在这里说得比较长一些吧。', '第二段话也差不多是这么长的呢。'].join('\n'));
    const ctx = await deliver(event);
    expect(fake.calls).toHaveLength(1);
    expect(fake.sentMessages).toHaveLength(0);
    expect(ctx.published.map((e) => e.kind)).toEqual([EventKind.SendFailed]);
    expect(ctx.published[0]!.payload).toMatchObject({ segmentIndex: 0, segmentCount: 2, retcode: 1400 });
    await deliver(event, 2);
    expect(fake.calls).toHaveLength(1);
  });

  it('resumes a half-sent action after a crash: sent segments are not resent, the rest go out', async () => {
    const event = actionEvent(['第一段话在这里说得比较长一些吧。', '第二段话也差不多是这么长的呢。'].join('\n'));
    await ledger.write(keys.partitionOf(GROUP), event.payload.actionId, 0, {
      state: 'sent',
      attempts: 1,
      onebotMessageId: '424242',
      at: new Date().toISOString(),
    });
    const ctx = await deliver(event, 2);
    expect(fake.sentMessages.map((m) => m.text)).toEqual(['第二段话也差不多是这么长的呢。']);
    expect(ctx.published.map((e) => (e.payload as MessageSentPayload).onebotMessageId)).toEqual([
      '424242',
      String(fake.sentMessages[0]!.messageId),
    ]);
  });

  it('lets only one of two handlers racing on the same action send it', async () => {
    const event = actionEvent('并发也只发一次');
    const results = await Promise.allSettled([deliver(event), deliver(event, 2)]);
    expect(fake.calls).toHaveLength(1);
    const rejected = results.filter((r) => r.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect((rejected[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'SEND.CONCURRENT' });
    const retried = await deliver(event, 3);
    expect(fake.calls).toHaveLength(1);
    expect(retried.published.map((e) => e.kind)).toEqual([EventKind.MessageSent]);
  });

  it('sends private targets with send_private_msg', async () => {
    const ctx = await deliver(actionEvent('悄悄话', { targetType: 'private' }));
    expect(fake.sentMessages.map((m) => [m.action, m.userId, m.text])).toEqual([
      ['send_private_msg', '20001', '悄悄话'],
    ]);
    expect(ctx.published[0]).toMatchObject({ kind: EventKind.MessageSent, groupId: null });
  });

  it('refuses an action with nothing to say without calling the API', async () => {
    const ctx = await deliver(actionEvent('  \n '));
    expect(fake.calls).toHaveLength(0);
    expect(ctx.published).toEqual([]);
    expect(await sample('qunli_send_rejected_total', { reason: 'empty_text' })).toBe(1);
  });
});
