import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  EpisodeJob,
  episodeIdFor,
  episodeJobId,
  EventKind,
  Keyspace,
  makeEvent,
  PRIORITY,
  QueueName,
  type ContextMessage,
  type EpisodeControlPayload,
  type EpisodeControlRecord,
  type EventEnvelope,
  type MessagePayload,
  type Tool,
} from '@app/contracts';
import { createRedis, QunliConfig } from '@app/platform';
import {
  createTestDatabase,
  deleteKeys,
  LlmDouble,
  REPO_ROOT,
  sampleMessage,
  testConfig,
  testRedis,
  TEST_REDIS_URL,
  uniquePrefix,
  type ChatCompletionBody,
  type ScriptedAnswer,
  type TestDatabase,
} from '@app/testing';
import { CognitionModule } from '../../apps/cognition/src/cognition.module.js';
import type { EpisodeResult } from '../../apps/cognition/src/episodes/episode.runner.js';
import { HookRegistry } from '../../apps/cognition/src/hooks/hook.registry.js';
import { ToolRegistry } from '../../apps/cognition/src/tools/tool.registry.js';

export const PLANNER_MODEL = 'double-planner';
export const REPLYER_MODEL = 'double-replyer';
export const GROUP = '30001';

/** Only the planner's requests take this answer. */
export function forPlanner(answer: ScriptedAnswer): ScriptedAnswer {
  return { ...answer, match: (body: ChatCompletionBody) => body.model === PLANNER_MODEL };
}

/** Only the replyer's requests take this answer. */
export function forReplyer(answer: ScriptedAnswer): ScriptedAnswer {
  return { ...answer, match: (body: ChatCompletionBody) => body.model === REPLYER_MODEL };
}

export function call(name: string, args: Record<string, unknown> | string, content?: string): ScriptedAnswer {
  return forPlanner({
    kind: 'tool',
    calls: [{ name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }],
    ...(content !== undefined ? { content } : {}),
  });
}

/** Every text a request's messages carry, joined (for "the planner saw X"). */
export function promptText(body: ChatCompletionBody | null): string {
  return (body?.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

/**
 * Cognition as a real Nest app on real Redis, Postgres and BullMQ, against the LLM double, with the test playing
 * the scheduler: it enqueues episode jobs, writes and publishes control commands, appends messages and tool
 * results to the log, and enqueues the continuation jobs.
 */
export class CognitionHarness {
  app!: INestApplication;
  redis!: Redis;
  keys!: Keyspace;
  double!: LlmDouble;
  queue!: Queue<EpisodeJob>;
  config!: QunliConfig;
  private queueEvents!: QueueEvents;
  private bull!: Redis;
  private bullEvents!: Redis;
  database!: TestDatabase;
  private prefix!: string;

  static async start(settings: Record<string, string | number> = {}, label = 'cognition'): Promise<CognitionHarness> {
    const h = new CognitionHarness();
    h.redis = testRedis();
    h.database = await createTestDatabase(label);
    h.double = await LlmDouble.start();
    h.prefix = uniquePrefix(label);
    h.config = testConfig('cognition', {
      REDIS_URL: TEST_REDIS_URL,
      DATABASE_URL: h.database.url,
      QUNLI_REDIS_PREFIX: h.prefix,
      OPENAI_BASE_URL: h.double.baseUrl,
      OPENAI_API_KEY: 'test-key',
      QUNLI_MODEL_PLANNER: PLANNER_MODEL,
      QUNLI_MODEL_REPLYER: REPLYER_MODEL,
      QUNLI_LLM_RETRY_BASE_MS: 10,
      QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
      ...settings,
    });
    h.keys = new Keyspace(h.prefix, h.config.QUNLI_PARTITIONS);
    const moduleRef = await Test.createTestingModule({ imports: [CognitionModule] })
      .overrideProvider(QunliConfig)
      .useValue(h.config)
      .compile();
    h.app = moduleRef.createNestApplication({ logger: ['error'] });
    await h.app.init();
    h.bull = createRedis(TEST_REDIS_URL, 'test-scheduler', { enableAutoPipelining: false });
    h.queue = new Queue(QueueName.Episodes, { connection: h.bull, prefix: h.keys.bullPrefix });
    h.bullEvents = h.bull.duplicate();
    h.queueEvents = new QueueEvents(QueueName.Episodes, { connection: h.bullEvents, prefix: h.keys.bullPrefix });
    await h.queueEvents.waitUntilReady();
    return h;
  }

  async close(): Promise<void> {
    await this.app?.close();
    await this.queueEvents?.close();
    await this.queue?.close();
    await this.double?.close();
    this.bull?.disconnect();
    this.bullEvents?.disconnect();
    await deleteKeys(this.redis, this.prefix);
    this.redis.disconnect();
    await this.database?.drop();
  }

  register(tool: Tool<never>): () => void {
    return this.app.get(ToolRegistry).register(tool);
  }

  get tools(): ToolRegistry {
    return this.app.get(ToolRegistry);
  }

  get hooks(): HookRegistry {
    return this.app.get(HookRegistry);
  }

  /** A message event as ingress would append it (and appended to the log). */
  async message(
    text: string,
    options: {
      direct?: boolean;
      sender?: Partial<MessagePayload['sender']>;
      segments?: MessagePayload['segments'];
    } = {},
  ): Promise<EventEnvelope<MessagePayload>> {
    const payload = sampleMessage(text, {
      groupName: '摸鱼研究所',
      ...(options.direct ? { mentionsSelf: true, directReason: 'at' as const } : {}),
      ...(options.segments ? { segments: options.segments } : {}),
    });
    payload.sender = { ...payload.sender, ...(options.sender ?? {}) };
    const event = makeEvent({
      kind: options.direct ? EventKind.MessageDirect : EventKind.MessageObserved,
      groupId: GROUP,
      payload,
      source: 'ingress',
      priority: options.direct ? PRIORITY.direct : PRIORITY.normal,
    });
    await this.redis.xadd(
      this.keys.stream(this.keys.partitionOf(GROUP)),
      '*',
      'k',
      event.kind,
      'e',
      JSON.stringify(event),
    );
    return event;
  }

  /** A start job for a trigger, as the scheduler builds it. */
  startJob(trigger: EventEnvelope<MessagePayload>, context: ContextMessage[] = [], deadlineMs = 120_000): EpisodeJob {
    return EpisodeJob.create({
      episodeId: episodeIdFor(trigger.id),
      groupId: GROUP,
      mode: 'start',
      trigger,
      context,
      deadline: new Date(Date.now() + deadlineMs).toISOString(),
      controlSeq: 1,
      lane: trigger.kind === EventKind.MessageDirect ? 'direct' : 'ambient',
    });
  }

  /** Enqueue (without waiting). */
  async enqueue(job: EpisodeJob): Promise<void> {
    await this.queue.add('episode', job, {
      jobId: episodeJobId(job.episodeId, job.mode ?? 'start', job.controlSeq ?? 1),
      attempts: 3,
    });
  }

  async finished(job: EpisodeJob, timeoutMs = 60_000): Promise<EpisodeResult> {
    const bullJob = await this.queue.getJob(episodeJobId(job.episodeId, job.mode ?? 'start', job.controlSeq ?? 1));
    if (!bullJob) throw new Error(`no job for ${job.episodeId}`);
    return (await bullJob.waitUntilFinished(this.queueEvents, timeoutMs)) as EpisodeResult;
  }

  async run(job: EpisodeJob, timeoutMs = 60_000): Promise<EpisodeResult> {
    await this.enqueue(job);
    return this.finished(job, timeoutMs);
  }

  /** Play the scheduler's control commit: the fact, the durable record, the publish. */
  async control(command: Omit<EpisodeControlPayload, 'reason'> & { reason?: string }): Promise<void> {
    const payload: EpisodeControlPayload = { reason: command.command, ...command };
    const p = this.keys.partitionOf(GROUP);
    const event = makeEvent({ kind: EventKind.EpisodeControl, groupId: GROUP, payload, source: 'scheduler' });
    const record: EpisodeControlRecord = {
      seq: payload.seq,
      latest: payload,
      stopped: payload.command === 'cancel' || payload.command === 'supersede',
    };
    const previous = await this.redis.get(this.keys.episodeControl(p, payload.episodeId));
    if (previous && (JSON.parse(previous) as EpisodeControlRecord).stopped) record.stopped = true;
    await this.redis
      .multi()
      .xadd(this.keys.stream(p), '*', 'k', event.kind, 'e', JSON.stringify(event))
      .set(this.keys.episodeControl(p, payload.episodeId), JSON.stringify(record))
      .exec();
    await this.redis.publish(this.keys.episodeControlChannel, JSON.stringify(payload));
  }

  /** The resume job the scheduler enqueues after `timer.fired` / `tool.result`, with the group's fresh window. */
  resumeJob(
    start: EpisodeJob,
    seq: number,
    resume: EpisodeJob['resume'] & object,
    context: ContextMessage[] = start.context,
  ): EpisodeJob {
    return EpisodeJob.create({ ...start, mode: 'resume', controlSeq: seq, resume, context });
  }

  /** Every event in the group's partition, in log order. */
  async log(): Promise<EventEnvelope[]> {
    const entries = await this.redis.xrange(this.keys.stream(this.keys.partitionOf(GROUP)), '-', '+');
    return entries.map(([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope);
  }

  /** The events an episode wrote. */
  async episodeEvents(episodeId: string): Promise<EventEnvelope[]> {
    return (await this.log()).filter(
      (e) => e.source === 'cognition' && (e.payload as { episodeId?: string }).episodeId === episodeId,
    );
  }

  async payloads<T>(episodeId: string, kind: string): Promise<T[]> {
    return (await this.episodeEvents(episodeId)).filter((e) => e.kind === kind).map((e) => e.payload as T);
  }
}

/** A context line (what the scheduler keeps in a group's recent window) for a message event. */
export function contextOf(event: EventEnvelope<MessagePayload>): ContextMessage {
  return {
    eventId: event.id,
    messageId: event.payload.messageId,
    userId: event.payload.sender.userId,
    displayName: event.payload.sender.displayName,
    text: event.payload.text,
    sentAt: event.payload.sentAt,
    fromSelf: false,
  };
}

/** A tool for tests: records its calls; `run` says what it returns. */
export function testTool(
  spec: Partial<Tool<Record<string, unknown>>> & { name: string },
  run: (args: Record<string, unknown>) => Promise<ToolOutcomeLike> | ToolOutcomeLike = () => ({ ok: true, text: 'ok' }),
): Tool<never> & { calls: Record<string, unknown>[] } {
  const calls: Record<string, unknown>[] = [];
  const tool = {
    description: `测试工具 ${spec.name}`,
    inputSchema: { type: 'object', properties: {}, additionalProperties: true },
    visibility: 'core' as const,
    permission: 'member' as const,
    timeoutMs: 5000,
    sideEffect: false,
    idempotent: true,
    maxResultChars: 2000,
    maxRetries: 0,
    requiresConfirmation: false,
    source: 'test',
    validate: (args: unknown) => ({ ok: true as const, value: (args ?? {}) as Record<string, unknown> }),
    execute: async (args: Record<string, unknown>) => {
      calls.push(args);
      return run(args);
    },
    ...spec,
    calls,
  };
  return tool as unknown as Tool<never> & { calls: Record<string, unknown>[] };
}

type ToolOutcomeLike = {
  ok: boolean;
  text: string;
  data?: Record<string, unknown>;
  error?: { code: string; message: string; retryable?: boolean };
};
