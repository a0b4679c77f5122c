import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { EventKind, Keyspace, QueueName, type EventEnvelope, type PersonalActivityPayload } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { ActivityContextProvider, AgendaRepository } from '@app/memory';
import { dataSourceOptions, openDataSource, replay } from '@app/persistence';
import { loadPersona } from '@app/persona';
import { Clock, Metrics } from '@app/platform';
import {
  createTestDatabase,
  deleteKeys,
  projectStreams,
  streamEvents,
  testConfig,
  testRedis,
  uniquePrefix,
  type TestDatabase,
} from '@app/testing';
import { LifeDirector } from './life-director.service.js';
import { parseLifeScript } from './life-script.js';
import { LifeStateStore } from './life-state.store.js';

const persona = loadPersona('personas/default.yaml');
const script = parseLifeScript(
  {
    personaId: 'test-persona',
    mood: '平静',
    disclosure: { default: 'open', groups: { '2002': 'vague' } },
    goals: [{ id: 'study', title: '考研', description: '备考' }],
    milestones: [{ id: 'study-1', goal: 'study', title: '第一次认真复习', afterSessions: 1 }],
    activities: [
      {
        at: '08:00',
        title: '上课',
        description: '专业课',
        durationMinutes: 120,
        phases: [
          { name: '第一节', until: 0.5 },
          { name: '第二节', until: 1 },
        ],
        beats: [
          { at: 0.25, text: '被点名了' },
          { at: 0.75, text: '老师布置了作业' },
        ],
      },
      {
        at: '10:00',
        title: '图书馆',
        description: '三楼靠窗写作业',
        durationMinutes: 120,
        goal: 'study',
        beats: [{ at: 0.5, text: '写完了一半' }],
      },
      { at: '12:00', title: '午饭', description: '食堂', durationMinutes: 60 },
    ],
  },
  persona,
);

/** Shanghai wall-clock time on 2025-05-13. */
const at = (hh: number, mm: number) => Date.UTC(2025, 4, 13, hh - 8, mm);

/**
 * A simulated, scaled clock: product time runs 60× wall time from an epoch, and the test moves wall time by hand
 * (a minute of wall time is an hour of the life line).
 */
const EPOCH = at(7, 0);
const SCALE = 60;
let wall = EPOCH;
const clock = new Clock(SCALE, EPOCH, () => wall);
function setProductTime(productMs: number): void {
  wall = EPOCH + (productMs - EPOCH) / SCALE;
}

let redis: Redis;
let prefix: string;
let keys: Keyspace;
let queue: Queue;
let queueRedis: Redis;
let database: TestDatabase;
let db: DataSource;

const config = testConfig('life-director', {
  QUNLI_TIME_SCALE: SCALE,
  QUNLI_TIME_EPOCH: new Date(EPOCH).toISOString(),
});

/** A fresh director, as a restarted process builds it: nothing in memory, everything from Redis. */
function startDirector(): { director: LifeDirector; metrics: Metrics } {
  const metrics = new Metrics('life-director', false);
  const eventLog = new EventLog(redis, keys, metrics);
  const store = new LifeStateStore(redis, keys, metrics);
  return { director: new LifeDirector(eventLog, store, script, clock, config, queue, metrics), metrics };
}

async function lifeEvents(): Promise<EventEnvelope<PersonalActivityPayload>[]> {
  return (await streamEvents(redis, keys)).map((e) => e.event as EventEnvelope<PersonalActivityPayload>);
}

function describeEvent(e: EventEnvelope<PersonalActivityPayload>): string {
  const short = e.kind.replace('personal.', '');
  if (e.kind === EventKind.PersonalActivityBeat) return `${short} ${e.payload.title}: ${e.payload.beat}`;
  if (e.kind === EventKind.PersonalMilestoneReached)
    return `${short} ${(e.payload as unknown as { title: string }).title}`;
  if (e.kind === EventKind.PersonalAgendaLoaded) return short;
  return `${short} ${e.payload.title}`;
}

async function section(groupId: string, productMs: number): Promise<string | null> {
  const provider = new ActivityContextProvider(new AgendaRepository(db));
  return provider.provide({
    episodeId: 'ep',
    groupId,
    selfId: '10001',
    senderId: '20001',
    senderName: '小王',
    text: '你在干嘛',
    now: new Date(productMs),
  });
}

beforeAll(async () => {
  redis = testRedis();
  prefix = uniquePrefix('life');
  keys = new Keyspace(prefix, 4);
  queueRedis = testRedis();
  queue = new Queue(QueueName.LifeDetails, { connection: queueRedis, prefix: keys.bullPrefix });
  database = await createTestDatabase('life');
  db = await openDataSource(dataSourceOptions(database.url));
});

afterAll(async () => {
  await queue?.close();
  queueRedis?.disconnect();
  await deleteKeys(redis, prefix);
  redis.disconnect();
  await db?.destroy();
  await database?.drop();
});

describe('the life line on a scaled clock', () => {
  it('records each start, beat and completion once across ticks and a restart, and catches up what it missed', async () => {
    const started = startDirector();
    const metrics = started.metrics;
    let director = started.director;
    setProductTime(at(8, 10));
    expect(clock.now().toISOString()).toBe(new Date(at(8, 10)).toISOString());
    await director.tick();
    await director.tick();
    setProductTime(at(8, 40));
    await director.tick();
    await director.tick();
    expect((await lifeEvents()).map(describeEvent)).toEqual([
      'agenda.loaded',
      'activity.started 上课',
      'activity.beat 上课: 被点名了',
    ]);
    expect(await metrics.scrape()).toMatch(/qunli_life_ticks_total\{result="unchanged",app="life-director"\} 2/);

    // The process dies; a new one starts two and a half product hours later.
    ({ director } = startDirector());
    setProductTime(at(11, 5));
    await director.tick();
    await director.tick();
    const events = await lifeEvents();
    expect(events.map(describeEvent)).toEqual([
      'agenda.loaded',
      'activity.started 上课',
      'activity.beat 上课: 被点名了',
      'activity.beat 上课: 老师布置了作业',
      'activity.completed 上课',
      'activity.started 图书馆',
      'activity.beat 图书馆: 写完了一半',
    ]);
    // Caught-up changes carry the life-line time they happened at, in order.
    const times = events.slice(1).map((e) => e.payload.at);
    expect(times).toEqual([
      new Date(at(8, 0)).toISOString(),
      new Date(at(8, 30)).toISOString(),
      new Date(at(9, 30)).toISOString(),
      new Date(at(10, 0)).toISOString(),
      new Date(at(10, 0)).toISOString(),
      new Date(at(11, 0)).toISOString(),
    ]);
    expect(events.every((e) => e.groupId === null && e.source === 'life-director')).toBe(true);
    expect(events[6]!.payload).toMatchObject({ phase: '进行中', nextTitle: '午饭', goalId: 'study', beatIndex: 0 });

    setProductTime(at(12, 5));
    ({ director } = startDirector());
    await director.tick();
    expect((await lifeEvents()).slice(7).map(describeEvent)).toEqual([
      'activity.completed 图书馆',
      'milestone.reached 第一次认真复习',
      'activity.started 午饭',
    ]);
  });

  it('tells "what are you doing" from the one timeline in two groups, at the same time and an hour apart', async () => {
    await projectStreams(redis, keys, db);
    // 11:05: in the library. Group 2001 is open, group 2002 is told only the gist.
    const open = await section('2001', at(11, 5));
    const vague = await section('2002', at(11, 5));
    expect(open).toBe(
      [
        '当前活动：图书馆——三楼靠窗写作业',
        '开始时间：10:00（已经 1 小时 5 分钟）',
        '阶段/进度：进行中，约 54%',
        '最近片段：写完了一半（11:00）',
        '接下来：12:00 午饭',
        '心情：平静',
      ].join('\n'),
    );
    expect(vague).toBe(
      [
        '当前活动：图书馆',
        '开始时间：10:00（已经 1 小时 5 分钟）',
        '阶段/进度：进行中，约 54%',
        '接下来：12:00 午饭',
        '（在这个群只简单说在干什么，不讲细节和片段）',
      ].join('\n'),
    );
    // The same question in both groups at the same instant reads the same activity, start and progress.
    const shared = (text: string | null) => text!.split('\n').filter((l) => /^(开始时间|阶段\/进度|接下来)/.test(l));
    expect(shared(vague)).toEqual(shared(open));

    // An hour later the line has moved on, in both groups alike.
    const laterOpen = await section('2001', at(12, 5));
    const laterVague = await section('2002', at(12, 5));
    expect(laterOpen!.split('\n')[0]).toBe('当前活动：午饭——食堂');
    expect(laterVague!.split('\n')[0]).toBe('当前活动：午饭');
    expect(shared(laterVague)).toEqual(shared(laterOpen));
    expect(shared(laterOpen)[0]).toBe('开始时间：12:00（已经 5 分钟）');

    const report = await replay(db);
    expect(report.tables.activities).toMatchObject({ equal: true, rows: 3 });
    expect(report.tables.beats).toMatchObject({ equal: true, rows: 3 });
    expect(report.tables.agenda_milestones).toMatchObject({ equal: true, rows: 1 });
    expect(report.equal).toBe(true);
  });
});
