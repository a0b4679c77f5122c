import type { Redis } from 'ioredis';
import { EventKind, Keyspace, type EventEnvelope, type PersonalActivityPayload } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { parsePersona } from '@app/persona';
import { Clock, Metrics } from '@app/platform';
import { deleteKeys, testRedis, uniquePrefix } from '@app/testing';
import { LifeDirector } from './life-director.service.js';

const persona = parsePersona({
  identity: { name: '林小满', aliases: [], description: '大三学生' },
  values: ['真诚'],
  mood: '平静',
  interests: ['猫'],
  participationBias: 0.5,
  curiosity: 0.5,
  sociability: 0.5,
  patience: 0.5,
  toolBias: 0.5,
  speakingStyle: '口语',
  routine: [
    { at: '08:00', title: '上课', description: '专业课', durationMinutes: 120, beats: ['被点名了'] },
    { at: '10:00', title: '图书馆', description: '写作业', durationMinutes: 120 },
  ],
});

/** Shanghai wall-clock time on 2025-05-13. */
const at = (hh: number, mm: number) => new Date(Date.UTC(2025, 4, 13, hh - 8, mm));

let redis: Redis;
let prefix: string;
let keys: Keyspace;
let director: LifeDirector;
let metrics: Metrics;

async function lifeEvents(): Promise<EventEnvelope<PersonalActivityPayload>[]> {
  const entries = await redis.xrange(keys.stream(keys.partitionOf(null)), '-', '+');
  return entries.map(
    ([, fields]) => JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope<PersonalActivityPayload>,
  );
}

beforeAll(() => {
  redis = testRedis();
  prefix = uniquePrefix('life');
  keys = new Keyspace(prefix, 16);
  metrics = new Metrics('life-director', false);
  director = new LifeDirector(new EventLog(redis, keys, metrics), redis, persona, new Clock(1), metrics);
});

afterAll(async () => {
  await deleteKeys(redis, prefix);
  redis.disconnect();
});

describe('life director', () => {
  it('records each activity start, beat and completion exactly once, however often it ticks', async () => {
    await director.tick(at(8, 10));
    await director.tick(at(8, 10));
    await director.tick(at(8, 30));
    expect((await lifeEvents()).map((e) => [e.kind, e.payload.title])).toEqual([
      [EventKind.PersonalActivityStarted, '上课'],
    ]);

    await director.tick(at(9, 5));
    await director.tick(at(9, 5));
    await director.tick(at(10, 5));
    await director.tick(at(10, 5));
    await director.tick(at(10, 20));

    const events = await lifeEvents();
    expect(events.map((e) => [e.kind, e.payload.title])).toEqual([
      [EventKind.PersonalActivityStarted, '上课'],
      [EventKind.PersonalActivityBeat, '上课'],
      [EventKind.PersonalActivityCompleted, '上课'],
      [EventKind.PersonalActivityStarted, '图书馆'],
    ]);
    expect(events.every((e) => e.groupId === null && e.source === 'life-director')).toBe(true);
    expect(events[1]!.payload.beat).toBe('被点名了');
    expect(events[2]!.payload).toMatchObject({ activityId: '2025-05-13T08:00', progress: 1 });
    expect(events[3]!.payload).toMatchObject({
      activityId: '2025-05-13T10:00',
      startedAt: at(10, 0).toISOString(),
      expectedDurationMinutes: 120,
    });

    const state = JSON.parse((await redis.get(keys.lifeState(keys.partitionOf(null))))!);
    expect(state).toMatchObject({ activityId: '2025-05-13T10:00', beatsTold: 0 });
    const scrape = await metrics.scrape();
    expect(scrape).toMatch(/qunli_life_ticks_total\{result="changed",app="life-director"\} 3/);
    expect(scrape).toMatch(/qunli_life_ticks_total\{result="unchanged",app="life-director"\} 5/);
  });

  it('completes the activity and clears its state when a gap begins, without a beat it never saw', async () => {
    await director.tick(at(12, 30));
    const events = await lifeEvents();
    expect(events.map((e) => [e.kind, e.payload.title]).slice(-2)).toEqual([
      [EventKind.PersonalActivityStarted, '图书馆'],
      [EventKind.PersonalActivityCompleted, '图书馆'],
    ]);
    expect(await redis.exists(keys.lifeState(keys.partitionOf(null)))).toBe(0);
  });
});
