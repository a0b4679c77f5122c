import { Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import pg from 'pg';
import {
  EventKind,
  Keyspace,
  makeEvent,
  type EventEnvelope,
  type KeywordControlRequestedPayload,
} from '@app/contracts';
import { EventBusModule, EventLog } from '@app/event-bus';
import { PersistenceModule, ProjectorModule } from '@app/persistence';
import { loadPersona, PersonaPolicy } from '@app/persona';
import { Metrics, PlatformModule, QunliConfig } from '@app/platform';
import {
  createTestDatabase,
  deleteKeys,
  eventually,
  sampleMessage,
  testConfig,
  testRedis,
  TEST_REDIS_URL,
  uniquePrefix,
  type TestDatabase,
} from '@app/testing';
import { KEYWORD_LOOKUP, type KeywordContext, type KeywordLookup } from './keyword-lookup.js';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { KeywordsModule } from './keywords.module.js';
import { candidateWords } from './candidate-extraction.js';

/*
 * The lexicon on real Redis and Postgres, with two scheduler replicas: what one learns or is told, the other's
 * lookup sees; scopes do not leak across groups or threads; feedback moves weights; the projector keeps
 * keyword_sets / keyword_terms / keyword_hits.
 */

const G1 = '71001';
const G2 = '71002';

@Module({
  imports: [
    PlatformModule.forApp('scheduler'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    KeywordsModule.forRoot({ learn: true }),
  ],
})
class Replica {}

@Module({ imports: [Replica, ProjectorModule] })
class ReplicaWithProjector {}

let database: TestDatabase;
let sql: pg.Client;
let redis: Redis;
let prefix: string;
let replicas: INestApplication[] = [];
let log: EventLog;
let n = 0;

const persona = loadPersona('personas/default.yaml');
persona.interests = ['天文（尤其是流星雨）', '原神'];

async function replica(instance: string, projector: boolean): Promise<INestApplication> {
  const config = testConfig('scheduler', {
    REDIS_URL: TEST_REDIS_URL,
    DATABASE_URL: database.url,
    QUNLI_REDIS_PREFIX: prefix,
    QUNLI_PARTITIONS: 4,
    QUNLI_INSTANCE_ID: instance,
    QUNLI_LEASE_MS: 1500,
  });
  const moduleRef = await Test.createTestingModule({ imports: [projector ? ReplicaWithProjector : Replica] })
    .overrideProvider(QunliConfig)
    .useValue(config)
    .overrideProvider(PersonaPolicy)
    .useValue(persona)
    .compile();
  const app = moduleRef.createNestApplication({ logger: ['error'] });
  await app.init();
  return app;
}

const lookup = (app: INestApplication) => app.get<KeywordLookup>(KEYWORD_LOOKUP);
const termsHit = (app: INestApplication, text: string, context: KeywordContext) =>
  lookup(app)
    .match(text, context)
    .map((h) => `${h.scope}:${h.term}`);

function say(groupId: string, sender: string, text: string): EventEnvelope {
  return makeEvent({
    kind: EventKind.MessageObserved,
    groupId,
    source: 'ingress',
    payload: sampleMessage(text, {
      messageId: `k${n++}`,
      sender: { userId: sender, nickname: sender, card: '', displayName: sender, role: 'member' },
    }),
  });
}

function control(payload: Omit<KeywordControlRequestedPayload, 'requestedBy'>, groupId: string | null) {
  return makeEvent({
    kind: EventKind.KeywordControlRequested,
    groupId,
    source: 'cli',
    payload: { ...payload, requestedBy: 'medium-spec' },
  });
}

beforeAll(async () => {
  database = await createTestDatabase('keywords');
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  redis = testRedis();
  prefix = uniquePrefix('kw');
  replicas = [await replica('a', true), await replica('b', false)];
  log = replicas[0]!.get(EventLog);
});

afterAll(async () => {
  for (const app of replicas) await app.close();
  await deleteKeys(redis, prefix);
  redis.disconnect();
  await sql?.end();
  await database?.drop();
});

describe('keyword lexicon on Redis and Postgres', () => {
  it('seeds the persona interests at start, once, and every replica matches them', async () => {
    for (const app of replicas) {
      await eventually('seeded terms compiled', () =>
        Promise.resolve(termsHit(app, '今晚有流星雨，一起看天文直播吗', { groupId: G1 }).includes('global:天文')),
      );
    }
    const seeded = await replicas[1]!.get(KeywordLexiconStore).loadSets(['global:']);
    expect([...seeded.get('global:')!.terms.values()].map((t) => t.text).sort()).toEqual(
      expect.arrayContaining(['天文', '流星雨', '原神']),
    );
    const { rows } = await eventually('seed events projected', async () => {
      const r = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM keyword_terms WHERE source = 'persona'`);
      return r.rows[0]!.n >= 3 && r;
    });
    expect(rows[0]!.n).toBe(seeded.get('global:')!.terms.size);
  });

  it('promotes a word the group keeps saying into that group only, visible on both replicas', async () => {
    const before = lookup(replicas[1]!).versionFor({ groupId: G1 });
    const otherBefore = lookup(replicas[1]!).versionFor({ groupId: G2 });
    for (const [who, text] of [
      ['alice', '今晚开黑吗'],
      ['bob', '开黑的人呢'],
      ['alice', '有人开黑吗'],
    ] as const) {
      await log.append(say(G1, who, text));
    }
    for (const app of replicas) {
      await eventually('promoted term visible', () =>
        Promise.resolve(termsHit(app, '来开黑', { groupId: G1 }).includes(`group:开黑`)),
      );
    }
    expect(termsHit(replicas[0]!, '来开黑', { groupId: G2 })).toEqual([]);
    expect(termsHit(replicas[0]!, '来开黑', { groupId: null })).toEqual([]);
    expect(lookup(replicas[1]!).versionFor({ groupId: G1 })).not.toBe(before);
    expect(lookup(replicas[1]!).versionFor({ groupId: G2 })).toBe(otherBefore);
    expect(lookup(replicas[0]!).versionFor({ groupId: G1 })).toBe(lookup(replicas[1]!).versionFor({ groupId: G1 }));
  });

  it('learns a word that is a name of Object.prototype like any other: promoted, never dead-lettered', async () => {
    const g = '7003';
    for (const [who, text] of [
      ['alice', 'constructor 又报错了'],
      ['bob', '谁动了 constructor'],
      ['alice', 'constructor 里别写逻辑'],
    ] as const) {
      await log.append(say(g, who, text));
    }
    await eventually('constructor promoted', () =>
      Promise.resolve(termsHit(replicas[0]!, '看看 constructor', { groupId: g }).includes('group:constructor')),
    );
  });

  it('keeps a thread summary\u2019s words in that thread of that group', async () => {
    await log.append(
      makeEvent({
        kind: EventKind.MemorySummaryWritten,
        groupId: G1,
        source: 'life-director',
        payload: {
          summaryId: 'sum-1',
          threadId: 't1',
          reason: 'every_n',
          summary: '讨论了显卡和主板',
          throughOrdinal: 30,
          messageCount: 30,
          participantIds: ['alice', 'bob'],
          lastMessageAt: new Date().toISOString(),
        },
      }),
    );
    await eventually('thread term visible', () =>
      Promise.resolve(termsHit(replicas[1]!, '主板坏了', { groupId: G1, threadId: 't1' }).includes('thread:主板')),
    );
    expect(termsHit(replicas[1]!, '主板坏了', { groupId: G1, threadId: 't2' })).toEqual([]);
    expect(termsHit(replicas[1]!, '主板坏了', { groupId: G2, threadId: 't1' })).toEqual([]);
    expect(termsHit(replicas[1]!, '主板坏了', { groupId: G1 })).toEqual([]);
  });

  it('raises the weight of a term whose hit led to a reply the person followed up on', async () => {
    const store = replicas[0]!.get(KeywordLexiconStore);
    const [hit] = lookup(replicas[0]!).match('来开黑', { groupId: G1 });
    const message = say(G1, 'alice', '周末来开黑');
    await log.append(message);
    await log.append(
      makeEvent({
        kind: EventKind.DecisionMade,
        groupId: G1,
        source: 'scheduler',
        cause: message,
        payload: {
          subjectEventId: message.id,
          outcome: 'deliberate',
          reason: 'deliberate: 0.61 ≥ 0.55 (keyword 开黑)',
          features: { keywords: hit!.weight },
          keywordHits: [{ termId: hit!.termId, term: hit!.term, scope: hit!.scope, weight: hit!.weight }],
          transitions: [{ seq: 1, from: 'captured', to: 'deliberating', reason: 'attention high', forced: false }],
        },
      }),
    );
    await log.append(
      makeEvent({
        kind: EventKind.ActionSend,
        groupId: G1,
        source: 'cognition',
        payload: {
          actionId: 'act-1',
          episodeId: 'ep-1',
          triggerEventId: message.id,
          targetType: 'group',
          targetId: G1,
          text: '我也来！',
        },
      }),
    );
    await log.append(say(G1, 'alice', '好耶几点'));
    const term = await eventually('weight raised', async () => {
      const t = (await store.loadSets([`group:${G1}`])).get(`group:${G1}`)!.terms.get(hit!.termId)!;
      return t.weight > hit!.weight && t;
    });
    expect(term.weight).toBeCloseTo(hit!.weight + 0.08);
    const projected = await eventually('hit projected', async () => {
      const r = await sql.query<{ term: string; outcome: string }>(
        `SELECT term, outcome FROM keyword_hits WHERE event_id = $1`,
        [message.id],
      );
      return r.rows.length === 1 && r.rows[0];
    });
    expect(projected).toEqual({ term: '开黑', outcome: 'deliberate' });
  });

  it('suppresses and pins on command; a bad command is refused and counted, and the next one still works', async () => {
    const versionBefore = lookup(replicas[1]!).versionFor({ groupId: G1 });
    await log.append(control({ command: 'suppress', scope: 'group', ownerId: G1, term: '开黑' }, G1));
    await log.append(control({ command: 'pin', scope: 'thread', ownerId: 'no-group-part', term: 'x' }, G2));
    await log.append(control({ command: 'delete', scope: 'group', ownerId: G2, term: '从没有过' }, G2));
    await log.append(
      control({ command: 'pin', scope: 'group', ownerId: G2, term: 'ＡＰＥＸ', aliases: ['Apex英雄'] }, G2),
    );
    await eventually('suppressed on the other replica', () =>
      Promise.resolve(termsHit(replicas[1]!, '来开黑', { groupId: G1 }).length === 0),
    );
    expect(lookup(replicas[1]!).versionFor({ groupId: G1 })).not.toBe(versionBefore);
    await eventually('pinned term visible', () =>
      Promise.resolve(termsHit(replicas[1]!, '今晚打apex英雄', { groupId: G2 }).includes('group:apex')),
    );
    expect(termsHit(replicas[1]!, '今晚打apex英雄', { groupId: G1 })).toEqual([]);
    const scrape = await replicas
      .map((app) => app.get(Metrics))
      .reduce(async (all, m) => (await all) + (await m.scrape()), Promise.resolve(''));
    expect(scrape).toMatch(/qunli_keyword_rejected_total\{code="KEYWORD.INVALID_SCOPE"[^}]*\} 1/);
    expect(scrape).toMatch(/qunli_keyword_rejected_total\{code="KEYWORD.NOT_FOUND"[^}]*\} 1/);

    const rows = await eventually('terms projected', async () => {
      const r = await sql.query<{ text: string; status: string; scope: string; owner_id: string }>(
        `SELECT text, status, scope, owner_id FROM keyword_terms WHERE text IN ('开黑', 'apex') ORDER BY text`,
      );
      return r.rows.length === 2 && r.rows[1]!.status === 'suppressed' && r.rows;
    });
    expect(rows).toEqual([
      { text: 'apex', status: 'pinned', scope: 'group', owner_id: G2 },
      { text: '开黑', status: 'suppressed', scope: 'group', owner_id: G1 },
    ]);
    const sets = await sql.query<{ version: number }>(
      `SELECT version FROM keyword_sets WHERE scope = 'group' AND owner_id = $1`,
      [G1],
    );
    const live = (await replicas[0]!.get(KeywordLexiconStore).allSets()).get(`group:${G1}`)!;
    expect(sets.rows[0]!.version).toBe(live.version);
  });

  it('never promotes a group word into the global set, however many groups say it', async () => {
    for (const group of ['71011', '71012', '71013']) {
      for (const who of ['carol', 'dave', 'carol']) await log.append(say(group, who, '有人开黑吗'));
    }
    await eventually('promoted in the last group', () =>
      Promise.resolve(termsHit(replicas[0]!, '开黑', { groupId: '71013' }).includes('group:开黑')),
    );
    const global = (await replicas[0]!.get(KeywordLexiconStore).loadSets(['global:'])).get('global:')!;
    expect([...global.terms.values()].map((t) => t.text)).not.toContain('开黑');
    expect(termsHit(replicas[0]!, '开黑', { groupId: '71099' })).toEqual([]);
    expect(new Keyspace(prefix, 4).keywordSets).toContain('{kw}');
  });

  it('a replica started later sees every set as it is, and the persona is not seeded again', async () => {
    const seededBefore = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM event_log WHERE kind = 'keyword.term.changed' AND envelope->'payload'->>'change' = 'seeded'`,
    );
    const late = await replica('c', false);
    replicas.push(late);
    expect(termsHit(late, '今晚打apex英雄', { groupId: G2 })).toEqual(['group:apex']);
    expect(termsHit(late, '来开黑', { groupId: G1 })).toEqual([]);
    expect(lookup(late).versionFor({ groupId: G1, threadId: 't1' })).toBe(
      lookup(replicas[0]!).versionFor({ groupId: G1, threadId: 't1' }),
    );
    await log.append(say(G2, 'erin', '今晚打ＡＰＥＸ吗'));
    await eventually('the new message counted in its group\u2019s pool', async () =>
      (await redis.exists(new Keyspace(prefix, 4).keywordPool(G2))) === 1 ? true : undefined,
    );
    const seededAfter = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM event_log WHERE kind = 'keyword.term.changed' AND envelope->'payload'->>'change' = 'seeded'`,
    );
    expect(seededAfter.rows[0]!.n).toBe(seededBefore.rows[0]!.n);
    expect(seededBefore.rows[0]!.n).toBeGreaterThan(0);
  });

  it('takes commands over HTTP on the scheduler, refusing bad ones with their code', async () => {
    const http = replicas[1]!;
    await http.listen(0, '127.0.0.1');
    const base = await http.getUrl();
    const post = (body: unknown) =>
      fetch(`${base}/keywords/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const accepted = await post({
      command: 'add',
      scope: 'group',
      ownerId: G2,
      term: '露营',
      weight: 0.6,
      requestedBy: 'panel',
    });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toEqual({ eventId: expect.any(String), set: `group:${G2}` });
    await eventually('added term visible', () =>
      Promise.resolve(termsHit(replicas[0]!, '周末去露营', { groupId: G2 }).includes('group:露营')),
    );
    const refused = await post({ command: 'pin', scope: 'group', term: '露营' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: 'KEYWORD.INVALID_SCOPE' } });
    const tooHeavy = await post({ command: 'add', scope: 'global', term: '露营', weight: 7 });
    expect(await tooHeavy.json()).toMatchObject({ error: { code: 'KEYWORD.INVALID_COMMAND' } });
    const listed = (await (await fetch(`${base}/keywords/terms?scope=group&ownerId=${G2}`)).json()) as {
      terms: { text: string; weight: number; source: string }[];
    };
    expect(listed.terms).toEqual(
      expect.arrayContaining([expect.objectContaining({ text: '露营', weight: 0.6, source: 'operator' })]),
    );
  });

  it('ages a busy group’s candidate pool in place once it has said a thousand messages', async () => {
    const group = '71021';
    const events = Array.from({ length: 1002 }, (_, i) =>
      say(group, `u${i % 7}`, i === 0 ? '冷门词汇出现' : '今晚吃火锅吗'),
    );
    for (let i = 0; i < events.length; i += 200) await log.appendAll(events.slice(i, i + 200));
    const pool = new Keyspace(prefix, 4).keywordPool(group);
    // 1001 messages: halved to 500, then one more. The common word was in all but the first.
    await eventually('every message counted', async () => Number(await redis.hget(pool, '#total')) === 501, 60_000);
    const [common] = candidateWords('今晚吃火锅吗');
    expect(JSON.parse((await redis.hget(pool, common!))!)).toMatchObject({ docs: 501 });
    const rare = candidateWords('冷门词汇出现');
    expect(rare.length).toBeGreaterThan(0);
    for (const word of rare) expect(await redis.hexists(pool, word)).toBe(0);
  }, 90_000);
});
