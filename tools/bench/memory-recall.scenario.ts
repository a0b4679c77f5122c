import { setTimeout as sleep } from 'node:timers/promises';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue } from 'bullmq';
import type pg from 'pg';
import {
  EventKind,
  Keyspace,
  makeEvent,
  PROMPT_CONTEXT_PROVIDERS,
  QueueName,
  type EventEnvelope,
  type PromptContextProvider,
} from '@app/contracts';
import { EventBusModule, EventLog } from '@app/event-bus';
import { MemoryContextModule, MemoryMessagesRepository, queryWords } from '@app/memory';
import { PersistenceModule, searchTerms } from '@app/persistence';
import { Metrics, PlatformModule, QunliConfig } from '@app/platform';
import { sampleMessage, testConfig, UtilsLlmDouble, type ChatCompletionBody } from '@app/testing';
import { ordinaryWords } from '../harness/llm-provider.js';
import { percentile, round } from './load.js';
import { BENCH_SELF_ID, BenchStack } from './stack.js';

export interface MemoryRecallOptions {
  messages: number;
  groups: number;
  queries: number;
  /** Older messages written straight into the first group's event memory: a group with a long history. */
  history: number;
}

const MAJORS = ['计算机', '新闻传播', '数学', '法学', '临床医学', '建筑', '英语', '金融'];
const FOODS = ['火锅', '烧烤', '麻辣烫', '螺蛳粉', '寿司', '煎饼果子', '小龙虾', '酸菜鱼'];
const CITIES = ['北京', '上海', '杭州', '成都', '西安', '南京', '武汉', '广州'];
const PLANS = ['面试', '看演唱会', '考试', '旅游', '见网友', '实习'];
const CHATTER = [
  '哈哈哈哈笑死',
  '今天好累啊',
  '有人打游戏吗',
  '晚饭吃啥',
  '这个番好好看',
  '作业写完了没',
  '明天早八救命',
  '图书馆人好多',
  '下雨了记得带伞',
  '芋圆今天又来了',
];

function pick<T>(list: readonly T[], n: number): T {
  return list[n % list.length]!;
}

/** One synthetic group chat line: mostly chatter, now and then something worth remembering. */
function line(group: number, i: number): { userId: string; name: string; text: string } {
  const member = (i * 7 + group) % 8;
  const userId = String(30_000 + group * 10 + member);
  const name = `群友${group}-${member}`;
  const seed = i * 31 + group * 17 + member;
  const kind = seed % 10;
  const text =
    kind === 0
      ? `我是${pick(MAJORS, seed)}专业的，大${(seed % 4) + 1}`
      : kind === 1
        ? `我最喜欢吃${pick(FOODS, seed)}了`
        : kind === 2
          ? `我下周要去${pick(CITIES, seed)}${pick(PLANS, seed)}`
          : `${pick(CHATTER, seed)}${seed % 3 === 0 ? '' : '～'}`;
  return { userId, name, text };
}

const QUESTIONS = ['{n}是什么专业的来着', '{n}喜欢吃什么', '谁下周要去{c}', '{n}最近要去哪', '上次说的{f}是谁喜欢'];

/** The `q`-th question asked in `group`, about one of its people. */
function question(group: number, q: number): string {
  return pick(QUESTIONS, q)
    .replace('{n}', line(group, q + 3).name)
    .replace('{c}', pick(CITIES, q))
    .replace('{f}', pick(FOODS, q));
}

/** A record_memory answer shaped like a real one: a summary and the facts the lines state. */
function answer(tool: string, body: ChatCompletionBody): Record<string, unknown> {
  const content = body.messages?.[1]?.content;
  const prompt = typeof content === 'string' ? content : '';
  if (tool === 'judge_jargon') return ordinaryWords(body);
  if (tool === 'write_detail') return { detail: '在看一本讲播客剪辑的书' };
  const facts: Record<string, unknown>[] = [];
  const lines = [...prompt.matchAll(/\[(\d+)\] (.+?)\((\d+)\)：(.*)/g)];
  for (const [, n, , userId, text] of lines) {
    const major = /我是(.+?)专业/.exec(text!);
    const food = /最喜欢吃(.+?)了/.exec(text!);
    const plan = /下周要去(.+)/.exec(text!);
    if (major) facts.push({ subject: userId, category: 'profile', key: '专业', value: major[1], lines: [Number(n)] });
    if (food)
      facts.push({ subject: userId, category: 'preference', key: '喜欢的食物', value: food[1], lines: [Number(n)] });
    if (plan)
      facts.push({ subject: userId, category: 'event', key: '计划', value: `下周去${plan[1]}`, lines: [Number(n)] });
  }
  const gist = lines.slice(0, 4).map((l) => `${l[2]}说${[...l[4]!].slice(0, 12).join('')}`);
  return { summary: `群里在闲聊：${gist.join('；')}。`, facts };
}

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`memory-recall: timed out waiting for ${what}`);
    await sleep(250);
  }
}

/**
 * `count` messages of `group` older than `before`, one every 5 s, written to `memory_messages` as the projector
 * writes them (the table's trigger fills the search vector). Lines repeat, so each text is segmented once.
 */
async function seedHistory(sql: pg.Client, group: number, count: number, before: number): Promise<void> {
  const terms = new Map<string, string>();
  for (let from = 0; from < count; from += 10_000) {
    const rows = Array.from({ length: Math.min(10_000, count - from) }, (_, k) => {
      const i = from + k;
      const { userId, name, text } = line(group, i);
      let cut = terms.get(text);
      if (cut === undefined) terms.set(text, (cut = searchTerms(text)));
      return { id: `history-${i}`, userId, name, sentAt: new Date(before - (count - i) * 5000), text, terms: cut };
    });
    await sql.query(
      `INSERT INTO memory_messages (event_id, group_id, user_id, display_name, from_self, sent_at, text, terms)
       SELECT id, $1, u, n, false, t, x, w
       FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[]) AS r(id, u, n, t, x, w)`,
      [
        String(700_000 + group),
        rows.map((r) => r.id),
        rows.map((r) => r.userId),
        rows.map((r) => r.name),
        rows.map((r) => r.sentAt),
        rows.map((r) => r.text),
        rows.map((r) => r.terms),
      ],
    );
  }
  // A long history's rows are old: autovacuum has been through them, so index-only scans skip the table.
  await sql.query('VACUUM ANALYZE memory_messages');
}

/**
 * `memory-recall`: replay a multi-group chat into a stack of scheduler (projector) and life-director (memory
 * workers) with a utils-model double, let memory summarise (every N, then idle), then time retrieval for prompts:
 * all four prompt sections (activity, memory, sender, jargon) for a question, as cognition asks them.
 */
export async function memoryRecall(options: MemoryRecallOptions): Promise<Record<string, unknown>> {
  const llm = await UtilsLlmDouble.start(answer);
  const stack = new BenchStack(['scheduler', 'life-director'], {
    OPENAI_BASE_URL: llm.baseUrl,
    OPENAI_API_KEY: 'bench',
    QUNLI_MEMORY_CALLS_PER_HOUR: '1000000',
    QUNLI_MEMORY_TOKENS_PER_HOUR: '100000000',
  });
  let context: Awaited<ReturnType<typeof NestFactory.createApplicationContext>> | undefined;
  let queue: Queue | undefined;
  try {
    await stack.start();
    const keys = new Keyspace(stack.prefix, 16);
    const eventLog = new EventLog(stack.redis, keys, new Metrics('bench', false));
    const perGroup = Math.ceil(options.messages / options.groups);
    const start = Date.now() - options.messages * 5000;
    let written = 0;
    const batch: EventEnvelope[] = [];
    for (let i = 0; i < perGroup && written < options.messages; i++) {
      for (let g = 0; g < options.groups && written < options.messages; g++) {
        const { userId, name, text } = line(g, i);
        batch.push(
          makeEvent({
            kind: EventKind.MessageObserved,
            groupId: String(700_000 + g),
            source: 'bench',
            actorIds: [userId],
            createdAt: new Date(start + written * 5000),
            payload: sampleMessage(text, {
              selfId: BENCH_SELF_ID,
              sender: { userId, nickname: name, card: '', displayName: name, role: 'member' },
            }),
          }),
        );
        written += 1;
        if (batch.length >= 500) await eventLog.appendAll(batch.splice(0));
      }
    }
    if (batch.length > 0) await eventLog.appendAll(batch.splice(0));
    const replayStarted = performance.now();

    const inboxTotal = async () => {
      let total = 0;
      for (let p = 0; p < keys.partitions; p++) total += await stack.redis.zcard(keys.inbox(p, 'memory'));
      return total;
    };
    await waitFor('the memory consumer', async () => (await inboxTotal()) >= written);
    queue = new Queue(QueueName.MemorySummaries, { connection: stack.redis.duplicate(), prefix: keys.bullPrefix });
    const drained = async () => {
      const counts = await queue!.getJobCounts('waiting', 'active', 'prioritized');
      const chunks = (await queue!.getDelayed()).filter((j) => j.name === 'chunk').length;
      return (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.prioritized ?? 0) + chunks === 0;
    };
    await waitFor('every-N summaries', drained);
    // Threads go idle at the end of the replay: bring their idle jobs forward rather than wait.
    for (const job of await queue.getDelayed()) if (job.name === 'idle') await job.promote();
    await waitFor('idle summaries', drained);
    const total = async () => {
      let n = 0;
      for (let p = 0; p < keys.partitions; p++) n += await stack.redis.xlen(keys.stream(p));
      return n;
    };
    await waitFor('the projector', async () => {
      const [{ n }] = (await stack.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM event_log')).rows as [
        { n: number },
      ];
      return n >= (await total());
    });
    const memorySeconds = (performance.now() - replayStarted) / 1000;
    const [counts] = (
      await stack.sql.query<{ summaries: number; facts: number }>(
        'SELECT (SELECT count(*)::int FROM memory_summaries) AS summaries, (SELECT count(*)::int FROM memory_facts) AS facts',
      )
    ).rows as [{ summaries: number; facts: number }];
    if (counts.summaries === 0) {
      throw new Error(
        `memory-recall: no summary was stored after ${llm.calls} utils-model calls (were the double's answers refused?)`,
      );
    }

    if (options.history > 0) await seedHistory(stack.sql, 0, options.history, start);

    const config = testConfig('tool', {
      DATABASE_URL: stack.databaseUrl,
      QUNLI_REDIS_PREFIX: stack.prefix,
      QUNLI_NICKNAMES: '林小满',
    });
    @Module({
      imports: [
        PlatformModule.forApp('tool', { config, withoutDefaultMetrics: true }),
        PersistenceModule.forRoot(),
        EventBusModule.forRoot(),
        MemoryContextModule,
      ],
    })
    class RecallModule {}
    context = await NestFactory.createApplicationContext(RecallModule, { logger: ['error'] });
    const providers = context.get<PromptContextProvider[]>(PROMPT_CONTEXT_PROVIDERS);
    const latencies: number[] = [];
    const sectionTimes = new Map<string, number[]>();
    for (let q = 0; q < options.queries; q++) {
      const g = q % options.groups;
      const asker = line(g, q);
      const text = question(g, q);
      const request = {
        episodeId: `ep-${q}`,
        groupId: String(700_000 + g),
        selfId: BENCH_SELF_ID,
        senderId: asker.userId,
        senderName: asker.name,
        text,
        now: new Date(),
      };
      const started = performance.now();
      await Promise.all(
        providers.map(async (p) => {
          await p.provide(request);
          const times = sectionTimes.get(p.section) ?? [];
          times.push(performance.now() - started);
          sectionTimes.set(p.section, times);
        }),
      );
      latencies.push(performance.now() - started);
    }
    latencies.sort((a, b) => a - b);

    // The first group's older messages alone, searched as the memory section does.
    const messages = context.get(MemoryMessagesRepository);
    const searchTimes: number[] = [];
    for (let q = 0; q < options.queries; q++) {
      const text = question(0, q);
      const started = performance.now();
      await messages.search('700000', queryWords(text), { skipRecent: 12, limit: 3, before: new Date() });
      searchTimes.push(performance.now() - started);
    }
    searchTimes.sort((a, b) => a - b);
    const [{ n: groupMessages }] = (
      await stack.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM memory_messages WHERE group_id = '700000'`)
    ).rows as [{ n: number }];
    const tokens = llm.promptTokens + llm.completionTokens;
    return {
      retrievalP99Ms: round(percentile(latencies, 99), 2),
      retrievalP50Ms: round(percentile(latencies, 50), 2),
      utilsTokensPer1kMessages: round(tokens / (written / 1000), 0),
      utilsCallsPer1kMessages: round(llm.calls / (written / 1000), 1),
      sectionP99Ms: Object.fromEntries(
        [...sectionTimes].map(([section, times]) => [
          section,
          round(
            percentile(
              times.sort((a, b) => a - b),
              99,
            ),
            2,
          ),
        ]),
      ),
      messageSearchP50Ms: round(percentile(searchTimes, 50), 2),
      messageSearchP99Ms: round(percentile(searchTimes, 99), 2),
      firstGroupMessages: groupMessages,
      messages: written,
      history: options.history,
      groups: options.groups,
      queries: options.queries,
      summaries: counts.summaries,
      facts: counts.facts,
      memorySeconds: round(memorySeconds, 1),
      summaryEvery: Number(process.env.QUNLI_MEMORY_SUMMARY_EVERY ?? new QunliConfig().QUNLI_MEMORY_SUMMARY_EVERY),
      tokenEstimate: 'CJK characters + other characters / 4 (the double reports usage)',
    };
  } finally {
    await context?.close();
    await queue?.close();
    await stack.stop();
    await llm.close();
  }
}
