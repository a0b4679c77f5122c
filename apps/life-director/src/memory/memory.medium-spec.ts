import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import {
  ConsumerGroup,
  EventKind,
  Keyspace,
  makeEvent,
  PROMPT_CONTEXT_PROVIDERS,
  QueueName,
  TOOL_PROVIDERS,
  type EventEnvelope,
  type MessagePayload,
  type PromptContextProvider,
  type PromptSection,
  type Tool,
  type ToolContext,
} from '@app/contracts';
import { connectStreamConsumer, EventBusModule, EventLog } from '@app/event-bus';
import {
  AgendaRepository,
  FactsRepository,
  JargonRepository,
  MemoryContextModule,
  MemoryErasure,
  MemoryMessagesRepository,
  MemoryRetrieval,
  SummariesRepository,
  ThreadBufferStore,
} from '@app/memory';
import { dataSourceOptions, openDataSource, PersistenceModule, replay } from '@app/persistence';
import { Metrics, PlatformModule, type QunliConfig } from '@app/platform';
import {
  createTestDatabase,
  deleteKeys,
  eventually,
  LlmDouble,
  projectStreams,
  sampleMessage,
  streamEvents,
  testConfig,
  testRedis,
  uniquePrefix,
  type TestDatabase,
} from '@app/testing';
import { LifeDirectorModule } from '../life-director.module.js';

/*
 * Memory end to end inside one process: messages go into real Redis streams, the `memory` consumer group and the
 * BullMQ workers of life-director summarise them through a real HTTP chat-completions double, the projector's
 * writer folds the events into Postgres, and cognition's side (MemoryContextModule, built alone) answers.
 */

const SELF = '10001';
const WANG = { userId: '20001', nickname: '小王', card: '', displayName: '小王', role: 'member' as const };
const LI = { userId: '20002', nickname: '小李', card: '', displayName: '小李', role: 'member' as const };
const ZHANG = { userId: '20003', nickname: '小张', card: '', displayName: '小张', role: 'member' as const };
const ZHAO = { userId: '20004', nickname: '小赵', card: '', displayName: '小赵', role: 'member' as const };
const CHEN = { userId: '20005', nickname: '小陈', card: '', displayName: '小陈', role: 'member' as const };
const GROUP_A = '3001';
const GROUP_B = '3002';
const GROUP_C = '3003';
const GROUP_D = '3004';

let redis: Redis;
let prefix: string;
let keys: Keyspace;
let database: TestDatabase;
let db: DataSource;
let llm: LlmDouble;
let config: QunliConfig;
let director: INestApplication;
let cognition: INestApplication;
let eventLog: EventLog;
let tools: Map<string, Tool<never>>;
let sections: Map<PromptSection, PromptContextProvider>;

function settings(extra: Record<string, string | number> = {}): QunliConfig {
  return testConfig('life-director', {
    DATABASE_URL: database.url,
    QUNLI_REDIS_PREFIX: prefix,
    QUNLI_PARTITIONS: 4,
    QUNLI_SELF_ID: SELF,
    QUNLI_NICKNAMES: '林小满',
    OPENAI_BASE_URL: llm.baseUrl,
    OPENAI_API_KEY: 'test-key',
    QUNLI_MEMORY_SUMMARY_EVERY: 30,
    QUNLI_LIFE_TICK_MINUTES: 600,
    QUNLI_CLAIM_IDLE_MS: 2000,
    ...extra,
  });
}

async function say(
  groupId: string,
  sender: typeof WANG,
  text: string,
  threadId?: string,
): Promise<EventEnvelope<MessagePayload>> {
  const event = makeEvent({
    kind: EventKind.MessageObserved,
    groupId,
    source: 'ingress',
    actorIds: [sender.userId],
    ...(threadId ? { threadId } : {}),
    payload: sampleMessage(text, { sender, selfId: SELF }),
  });
  await eventLog.append(event);
  return event;
}

/** The bot says something in reply to `cause` (as outbound records a delivered segment). */
async function botSays(groupId: string, cause: EventEnvelope, text: string): Promise<void> {
  await eventLog.append(
    makeEvent({
      kind: EventKind.MessageSent,
      groupId,
      source: 'outbound',
      cause,
      payload: {
        actionId: `act_${cause.id}`,
        episodeId: `ep_${cause.id}`,
        triggerEventId: cause.id,
        targetType: 'group',
        targetId: groupId,
        segmentIndex: 0,
        segmentCount: 1,
        text,
        attempts: 1,
        onebotMessageId: String(Math.floor(Math.random() * 1e9)),
      },
    }),
  );
}

async function memoryEvents(kind: string, groupId: string): Promise<EventEnvelope[]> {
  return (await streamEvents(redis, keys)).map((e) => e.event).filter((e) => e.kind === kind && e.groupId === groupId);
}

/** Wait until the memory consumer has buffered `n` messages of a thread. */
async function buffered(groupId: string, threadId: string | null, n: number): Promise<string> {
  return eventually(`${n} messages buffered in ${groupId}`, async () => {
    const thread =
      threadId ?? (await redis.hget(keys.memoryGroupThread(keys.partitionOf(groupId), groupId), 'threadId'));
    if (!thread) return undefined;
    const ordinal = await redis.hget(keys.memoryThreadState(keys.partitionOf(groupId), groupId, thread), 'ordinal');
    return Number(ordinal ?? 0) >= n ? thread : undefined;
  });
}

function context(groupId: string, senderId: string): ToolContext {
  return {
    episodeId: 'ep_test',
    toolCallId: 'call_1',
    groupId,
    selfId: SELF,
    senderId,
    senderRole: 'member',
    now: new Date(),
    signal: new AbortController().signal,
  };
}

async function provide(
  section: PromptSection,
  groupId: string,
  sender: typeof WANG,
  text: string,
): Promise<string | null> {
  return sections.get(section)!.provide({
    episodeId: 'ep_test',
    groupId,
    selfId: SELF,
    senderId: sender.userId,
    senderName: sender.displayName,
    text,
    now: new Date(),
  });
}

beforeAll(async () => {
  redis = testRedis();
  prefix = uniquePrefix('mem');
  keys = new Keyspace(prefix, 4);
  database = await createTestDatabase('memory');
  db = await openDataSource(dataSourceOptions(database.url));
  llm = await LlmDouble.start();
  config = settings();

  const module = await Test.createTestingModule({
    imports: [LifeDirectorModule.forApp({ config, withoutDefaultMetrics: true })],
  }).compile();
  director = module.createNestApplication({ logger: ['error'] });
  connectStreamConsumer(director, ConsumerGroup.Memory);
  await director.init();
  await director.startAllMicroservices();
  eventLog = director.get(EventLog);

  // Cognition's side, built alone from what the brief allows it: platform, persistence, event bus, memory.
  const reading = await Test.createTestingModule({
    imports: [
      PlatformModule.forApp('cognition', { config: settings(), withoutDefaultMetrics: true }),
      PersistenceModule.forRoot(),
      EventBusModule.forRoot(),
      MemoryContextModule,
    ],
  }).compile();
  cognition = reading.createNestApplication({ logger: ['error'] });
  await cognition.init();
  tools = new Map(cognition.get<Tool<never>[]>(TOOL_PROVIDERS).map((t) => [t.name, t]));
  sections = new Map(cognition.get<PromptContextProvider[]>(PROMPT_CONTEXT_PROVIDERS).map((p) => [p.section, p]));
}, 60_000);

afterAll(async () => {
  await cognition?.close();
  await director?.close();
  await llm?.close();
  await db?.destroy();
  await database?.drop();
  await deleteKeys(redis, prefix);
  redis.disconnect();
});

describe('memory', () => {
  let wangFirst: EventEnvelope<MessagePayload>;

  it('summarises an idle thread and extracts facts with the utils model, never from the bot’s own words', async () => {
    llm.nextToolCall('record_memory', {
      summary: '小王刚进群，自我介绍是计算机专业大二，喜欢吃火锅；小李下周三去北京面试。',
      facts: [
        { subject: WANG.userId, category: 'profile', key: '专业', value: '计算机', lines: [1], confidence: 0.9 },
        { subject: WANG.userId, category: 'preference', key: '喜欢的食物', value: '火锅', lines: [3], confidence: 0.8 },
        // Rests only on line 4, which the bot said: must not be stored.
        { subject: WANG.userId, category: 'preference', key: '口味', value: '特别能吃辣', lines: [4], confidence: 0.9 },
        { subject: LI.userId, category: 'event', key: '面试', value: '下周三去北京面试', lines: [5], confidence: 0.8 },
      ],
    });
    wangFirst = await say(GROUP_A, WANG, '大家好，我是新来的，计算机专业大二');
    await say(GROUP_A, LI, '欢迎欢迎');
    const food = await say(GROUP_A, WANG, '我最喜欢吃火锅了，周末有人一起吗');
    await botSays(GROUP_A, food, '我记得小王你特别能吃辣');
    await say(GROUP_A, LI, '我下周三要去北京面试，有点紧张');
    await say(GROUP_A, WANG, '加油！');
    const thread = await buffered(GROUP_A, null, 6);

    // The thread's idle job is a durable delayed BullMQ job; bring it forward instead of waiting 20 minutes.
    const queue = director.get<Queue>(getQueueToken(QueueName.MemorySummaries));
    const idle = await eventually('the idle job', async () =>
      (await queue.getDelayed()).find((j) => j.name === 'idle'),
    );
    expect(idle.data).toMatchObject({ groupId: GROUP_A, threadId: thread, through: 6, reason: 'idle' });
    await idle.promote();
    const [summary] = await eventually('the summary', () =>
      memoryEvents(EventKind.MemorySummaryWritten, GROUP_A).then((e) => e.length > 0 && e),
    );
    const facts = await memoryEvents(EventKind.MemoryFactLearned, GROUP_A);

    expect(summary!.payload).toMatchObject({ threadId: thread, reason: 'idle', throughOrdinal: 6, messageCount: 6 });
    expect((summary!.payload as { participantIds: string[] }).participantIds.sort()).toEqual([WANG.userId, LI.userId]);
    expect(facts.map((f) => (f.payload as { value: string }).value).sort()).toEqual([
      '下周三去北京面试',
      '火锅',
      '计算机',
    ]);
    expect(facts.every((f) => f.evidenceMessageIds.length > 0)).toBe(true);

    // The model saw the bot's line, labelled as the bot's, with every person's line numbered.
    const prompt = JSON.stringify(llm.completionRequests.at(-1)!.body!.messages);
    expect(prompt).toContain('[4] 机器人(10001)：我记得小王你特别能吃辣');
    expect(prompt).toContain('[1] 小王(20001)：大家好，我是新来的，计算机专业大二');

    await projectStreams(redis, keys, db);
    const rows = await db.query<{ key: string; value: string; confidence: number }[]>(
      `SELECT key, value, confidence FROM memory_facts WHERE subject_user_id = $1 ORDER BY key`,
      [WANG.userId],
    );
    expect(rows.map((r) => [r.key, r.value])).toEqual([
      ['专业', '计算机'],
      ['喜欢的食物', '火锅'],
    ]);
    expect(await db.query(`SELECT 1 FROM memory_facts WHERE value LIKE '%辣%'`)).toEqual([]);
    const budget = await redis.hgetall(
      keys.memoryBudget(keys.partitionOf(GROUP_A), GROUP_A, Math.floor(Date.now() / 3_600_000)),
    );
    expect(Number(budget.calls)).toBe(1);
    expect(Number(budget.tokens)).toBeGreaterThan(0);
  }, 60_000);

  it('answers a later question with the relevant fact, through the prompt section and the tools', async () => {
    const memory = await provide('memory', GROUP_A, LI, '小王喜欢吃什么来着？');
    expect(memory).toContain('这段话题的摘要：小王刚进群');
    expect(memory).toContain('- 小王：喜欢的食物（喜好）：火锅（把握 80%）');

    const sender = await provide('sender', GROUP_A, WANG, '我周末去哪吃好');
    expect(sender).toContain('小王（QQ 20001）：在这个群说过 3 条话');
    expect(sender).toContain('- 专业：计算机（把握 90%）');

    const profile = tools.get('query_person_profile')!;
    const byName = profile.validate({ name: '小王' });
    expect(byName.ok).toBe(true);
    const outcome = await profile.execute(byName.ok ? byName.value : (undefined as never), context(GROUP_A, LI.userId));
    expect(outcome.text).toContain('喜欢的食物（喜好）：火锅');
    expect(profile.validate({ user_id: 'abc' })).toEqual({ ok: false, errors: ['user_id: must be a QQ number'] });

    const search = tools.get('query_memory')!;
    const args = search.validate({ query: '谁要去北京面试' });
    const found = await search.execute(args.ok ? args.value : (undefined as never), context(GROUP_A, WANG.userId));
    expect(found.text).toContain('小李：面试（经历）：下周三去北京面试');
  });

  it('finds what someone said earlier beyond the recent window before any summary ran, and keeps groups apart', async () => {
    await say(GROUP_B, ZHANG, '我下周要去杭州看演唱会，超期待');
    for (let i = 0; i < 13; i++) await say(GROUP_B, i % 2 ? ZHAO : CHEN, `第${i}条闲聊，今天天气不错`);
    await say(GROUP_B, WANG, '晚上好');
    await buffered(GROUP_B, null, 15);
    await projectStreams(redis, keys, db);

    const memory = await provide('memory', GROUP_B, ZHAO, '小张去杭州干嘛来着？');
    expect(memory).toMatch(/以前的聊天：\n- (刚才|\d+ 分钟前) 小张：我下周要去杭州看演唱会，超期待/);
    expect(await db.query(`SELECT 1 FROM memory_summaries WHERE group_id = $1`, [GROUP_B])).toEqual([]);

    // 小王 is in both groups; what group A learned about him stays in group A.
    const aboutWang = await provide('memory', GROUP_B, ZHAO, '小王喜欢吃什么？专业是什么？');
    expect(aboutWang ?? '').not.toContain('火锅');
    expect(aboutWang ?? '').not.toContain('计算机');
    const senderB = await provide('sender', GROUP_B, WANG, '晚上好');
    expect(senderB).toBe('小王（QQ 20001）：在这个群说过 1 条话，' + senderB!.split('，').slice(1).join('，'));
    expect(senderB).not.toContain('记得关于 TA 的事');

    // Sharing is explicit: with profile facts allowed across groups, the major crosses and the taste does not.
    const sharing = new MemoryRetrieval(
      cognition.get(MemoryMessagesRepository),
      cognition.get(FactsRepository),
      cognition.get(SummariesRepository),
      cognition.get(JargonRepository),
      cognition.get(ThreadBufferStore),
      cognition.get(AgendaRepository),
      settings({ QUNLI_MEMORY_SHARED_CATEGORIES: 'profile' }),
    );
    const shared = await sharing.profile(GROUP_B, WANG.userId, '小王');
    expect(shared).toContain('专业：计算机');
    expect(shared).not.toContain('火锅');
  });

  it('summarises every N messages of a thread', async () => {
    llm.nextToolCall('record_memory', { summary: '小陈一个人在刷屏测试。', facts: [] });
    for (let i = 1; i <= 30; i++) await say(GROUP_C, CHEN, `刷屏第${i}条`, 'topic-c');
    const [summary] = await eventually('the every-N summary', () =>
      memoryEvents(EventKind.MemorySummaryWritten, GROUP_C).then((e) => e.length > 0 && e),
    );
    expect(summary!.payload).toMatchObject({
      threadId: 'topic-c',
      reason: 'every_n',
      throughOrdinal: 30,
      messageCount: 30,
    });
    expect(summary!.threadId).toBe('topic-c');
  }, 60_000);

  it("learns a scan's group words in one call and injects a meaning without a model call", async () => {
    const people = [ZHANG, ZHAO, CHEN];
    for (let i = 0; i < 6; i++) await say(GROUP_D, people[i % 3]!, `今天芋圆又来喝奶茶了，第${i}次`);
    await buffered(GROUP_D, null, 6);
    await projectStreams(redis, keys, db);
    // One call judges both words of the scan. The answer covers 芋圆 only: 奶茶 is left unjudged, for a later scan.
    llm.nextToolCall('judge_jargon', {
      verdicts: [{ term: '芋圆', is_jargon: true, meaning: '宿舍楼下那只橘猫的名字' }],
    });
    const before = llm.completionRequests.length;
    const maintenance = director.get<Queue>(getQueueToken(QueueName.MemoryMaintenance));
    await maintenance.add('jargon-scan', { groupId: GROUP_D });
    const learned = await eventually('the jargon', () =>
      memoryEvents(EventKind.MemoryJargonLearned, GROUP_D).then((e) => e.length > 0 && e),
    );
    expect(learned.map((e) => e.payload)).toEqual([
      expect.objectContaining({ term: '芋圆', status: 'learned', sightings: 6, users: 3 }),
    ]);
    const judged = llm.completionRequests.slice(before);
    expect(judged).toHaveLength(1);
    const prompt = JSON.stringify(judged[0]!.body?.messages);
    expect(prompt).toContain('词：芋圆');
    expect(prompt).toContain('词：奶茶');
    await projectStreams(redis, keys, db);
    expect(await db.query(`SELECT term, status FROM memory_jargon WHERE group_id = $1`, [GROUP_D])).toEqual([
      { term: '芋圆', status: 'learned' },
    ]);
    expect(await director.get(Metrics).scrape()).toMatch(
      /qunli_memory_llm_calls_total\{[^}]*work="jargon",outcome="partial"[^}]*\} 1/,
    );

    // The next scan asks again about the word left out, and only about it.
    llm.nextToolCall('judge_jargon', { verdicts: [{ term: '奶茶', is_jargon: false, meaning: '' }] });
    const second = llm.completionRequests.length;
    await maintenance.add('jargon-scan', { groupId: GROUP_D });
    await eventually('the second verdict', () =>
      memoryEvents(EventKind.MemoryJargonLearned, GROUP_D).then((e) => e.length > 1),
    );
    const again = JSON.stringify(llm.completionRequests.slice(second).map((r) => r.body?.messages));
    expect(again).toContain('词：奶茶');
    expect(again).not.toContain('词：芋圆');
    await projectStreams(redis, keys, db);

    const calls = llm.completionRequests.length;
    expect(await provide('jargon', GROUP_D, ZHAO, '芋圆今天吃了吗')).toBe(
      '- 芋圆：宿舍楼下那只橘猫的名字（这个群的说法）',
    );
    expect(await provide('jargon', GROUP_A, ZHAO, '芋圆今天吃了吗')).toBeNull();
    const jargon = tools.get('query_jargon')!;
    const args = jargon.validate({ term: '芋圆' });
    expect(
      (await jargon.execute(args.ok ? args.value : (undefined as never), context(GROUP_D, ZHAO.userId))).text,
    ).toContain('宿舍楼下那只橘猫');
    expect(llm.completionRequests.length).toBe(calls);
  }, 60_000);

  it('judges a word queued alone by a version before ADR 0051', async () => {
    llm.nextToolCall('judge_jargon', { verdicts: [{ term: '今天', is_jargon: false, meaning: '' }] });
    const maintenance = director.get<Queue>(getQueueToken(QueueName.MemoryMaintenance));
    await maintenance.add('jargon-meaning', { groupId: GROUP_D, term: '今天', sightings: 6, users: 3 });
    const verdict = await eventually('the verdict', () =>
      memoryEvents(EventKind.MemoryJargonLearned, GROUP_D).then((e) =>
        e.find((x) => (x.payload as { term?: string }).term === '今天'),
      ),
    );
    expect(verdict.payload).toMatchObject({ term: '今天', status: 'rejected', meaning: '普通词语', sightings: 6 });
  }, 60_000);

  it('forgets a person everywhere: the log, every table, every Redis key', async () => {
    await projectStreams(redis, keys, db);
    const traces = [WANG.userId, '小王', '火锅', '特别能吃辣', wangFirst.id];
    const before = await postgresTraces(traces);
    expect(before.length).toBeGreaterThan(0);
    expect((await redisTraces(traces)).length).toBeGreaterThan(0);

    const report = await director.get(MemoryErasure).forgetUser(WANG.userId);
    expect(report.events).toBeGreaterThan(0);

    expect(await postgresTraces(traces)).toEqual([]);
    expect(await redisTraces(traces)).toEqual([]);
    // Others' memory stays: 小李's interview, 小张's concert, the group word.
    expect(await db.query(`SELECT value FROM memory_facts WHERE subject_user_id = $1`, [LI.userId])).toEqual([
      { value: '下周三去北京面试' },
    ]);
    expect((await provide('memory', GROUP_B, ZHAO, '小张去杭州干嘛来着？')) ?? '').toContain('杭州看演唱会');
    expect((await replay(db)).equal).toBe(true);
  }, 60_000);
});

/** Every row of every table (event_log included) whose text holds one of `needles`. */
async function postgresTraces(needles: string[]): Promise<string[]> {
  const tables = await db.query<{ tablename: string }[]>(
    `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'typeorm_migrations'`,
  );
  const found: string[] = [];
  for (const { tablename } of tables) {
    const rows = await db.query<{ row: string }[]>(`SELECT t::text AS row FROM "${tablename}" t`);
    for (const { row } of rows)
      if (needles.some((n) => row.includes(n))) found.push(`${tablename}: ${row.slice(0, 160)}`);
  }
  return found;
}

/** Every Redis key under the test prefix whose name or content holds one of `needles`. */
async function redisTraces(needles: string[]): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    cursor = next;
    for (const key of batch) {
      const type = await redis.type(key);
      let content = '';
      if (type === 'string') content = (await redis.get(key)) ?? '';
      else if (type === 'list') content = (await redis.lrange(key, 0, -1)).join('\n');
      else if (type === 'hash') content = JSON.stringify(await redis.hgetall(key));
      else if (type === 'set') content = (await redis.smembers(key)).join('\n');
      else if (type === 'zset') content = (await redis.zrange(key, 0, -1)).join('\n');
      else if (type === 'stream') content = JSON.stringify(await redis.xrange(key, '-', '+'));
      const text = `${key}\n${content}`;
      if (needles.some((n) => text.includes(n))) found.push(`${key} (${type}): ${content.slice(0, 160)}`);
    }
  } while (cursor !== '0');
  return found;
}
