import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  EventKind,
  Keyspace,
  makeEvent,
  type DecisionKeywordHit,
  type EpisodeOutcome,
  type EventEnvelope,
  type EventOf,
  type KeywordControlRequestedPayload,
} from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { Clock, Metrics } from '@app/platform';
import { deleteKeys, prng, sampleMessage, testRedis, uniquePrefix } from '@app/testing';
import { AGE_AFTER, agePool, type CandidatePool, type CandidateWord } from './candidate-pool.rules.js';
import { candidateWords } from './candidate-extraction.js';
import { KeywordError, KeywordErrorCode } from './keyword.errors.js';
import { emptyFeedback, followFeedback, type FeedbackInput, type FeedbackState } from './keyword-feedback.rules.js';
import {
  applyControl,
  applyFeedback,
  GLOBAL_SET,
  groupSet,
  learnFromMessage,
  learnFromSummary,
  learnJargon,
  maintainIfDue,
  threadSet,
} from './keyword-learning.js';
import { KeywordConflict, KeywordLexiconStore } from './keyword-lexicon.store.js';
import { KeywordsConsumer } from './keywords.consumer.js';
import { LEARNS_FROM } from './learning-batch.js';
import { keywordEvents, LexiconDraft } from './lexicon-draft.js';
import { DEFAULT_LEXICON_POLICY, setKeyOf, setRef, termIdOf, type SetRef } from './lexicon.rules.js';

/*
 * Keyword learning in batches (ADR 0029) against one event at a time, on real Redis. `OneAtATime` below is the
 * consumer as it was before batches: each event read, decided and committed on its own. The same event sequences,
 * learned by it and by the batched consumer under every split into batches (short sequences) or many splits
 * (generated long ones), must leave every key under the prefix byte for byte the same and append the same events.
 * Then: another writer moving a set mid-batch (conflict: nothing written, the retry converges), a crash between the
 * append and the commit, and the number of round trips a batch takes.
 */

const G1 = '81001';
const G2 = '81002';
const SELF = '10001';
const T0 = Date.parse('2026-12-01T08:00:00Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let redis: Redis;
const prefixes: string[] = [];

beforeAll(() => {
  // Refusals are logged as warnings, hundreds of times over here.
  Logger.overrideLogger(['error']);
  redis = testRedis();
});

// Many keyspaces to scan and delete: on a loaded machine that takes longer than jest's default 5 s.
afterAll(async () => {
  for (const prefix of prefixes) await deleteKeys(redis, prefix);
  redis.disconnect();
}, 60_000);

/** Product time moves on at every reading: mostly by seconds, now and then by hours or days (decay, expiry). */
function steppedClock(): Clock {
  let calls = 0;
  let now = T0;
  return new Clock(1, 0, () => {
    calls++;
    now += calls % 29 === 0 ? 4 * 24 * HOUR : calls % 11 === 0 ? 2 * HOUR : calls % 5 === 0 ? 12 * MINUTE : 40_000;
    return now;
  });
}

const frozenClock = () => new Clock(1, 0, () => T0);

interface World {
  prefix: string;
  keys: Keyspace;
  store: KeywordLexiconStore;
  log: EventLog;
  batched: KeywordsConsumer;
  metrics: Metrics;
  reference: OneAtATime;
}

function world(clock: Clock, options: { log?: (log: EventLog) => EventLog; redis?: Redis } = {}): World {
  const prefix = uniquePrefix('kwb');
  prefixes.push(prefix);
  const connection = options.redis ?? redis;
  const keys = new Keyspace(prefix, 4);
  const metrics = new Metrics('scheduler', false);
  const realLog = new EventLog(connection, keys, metrics);
  const log = options.log ? options.log(realLog) : realLog;
  const store = new KeywordLexiconStore(connection, keys, log);
  return {
    prefix,
    keys,
    store,
    log: realLog,
    metrics,
    batched: new KeywordsConsumer(store, clock, metrics),
    reference: new OneAtATime(connection, keys, store, clock),
  };
}

/**
 * The consumer before ADR 0029, kept here as the reference: per event its own reads (done marker, feedback, the
 * group's set, the pool's words; then the term index, the other sets, the whole pool to age it) and its own commit.
 */
class OneAtATime {
  readonly refused = new Map<string, number>();
  private readonly policy = DEFAULT_LEXICON_POLICY;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly store: KeywordLexiconStore,
    private readonly clock: Clock,
  ) {}

  async learnAll(events: readonly EventEnvelope[]): Promise<void> {
    for (const event of events) if (LEARNS_FROM.has(event.kind)) await this.learn(event);
  }

  private async learn(event: EventEnvelope): Promise<void> {
    const groupId = event.groupId;
    const message = this.groupMessage(event);
    const words = message ? candidateWords(message.text) : [];
    const groupKeys: string[] = groupId ? [setKeyOf(groupSet(groupId))] : [];
    const [done, feedback, groupSets, poolWords] = await Promise.all([
      this.store.isDone(event.id),
      groupId ? this.loadFeedback(groupId) : Promise.resolve(null),
      this.store.loadSets(groupKeys),
      message && groupId ? this.loadPoolWords(groupId, words) : Promise.resolve(undefined),
    ]);
    if (done) return;
    const now = this.clock.nowMs();
    const feedbackInput = this.feedbackInput(event);
    const followed =
      groupId && feedbackInput
        ? followFeedback(feedback ?? emptyFeedback(), feedbackInput, now)
        : { state: feedback, outcomes: [] };
    const termSets = await this.setsOfTerms([
      ...new Set(followed.outcomes.flatMap((o) => o.hits.map((h) => h.termId))),
    ]);
    const setKeys: string[] = [...termSets.values()];
    let control: KeywordControlRequestedPayload | undefined;
    if (event.kind === EventKind.KeywordControlRequested) {
      control = (event as EventOf<'keyword.control.requested'>).payload;
      try {
        setKeys.push(setKeyOf(setRef(control.scope, control.ownerId)));
      } catch (error) {
        return this.reject(event, error);
      }
    }
    if (event.kind === EventKind.MemorySummaryWritten && groupId) {
      setKeys.push(setKeyOf(threadSet(groupId, (event as EventOf<'memory.summary.written'>).payload.threadId)));
    }
    const loaded = new Map(groupSets);
    for (const [key, set] of await this.store.loadSets(setKeys.filter((key) => !loaded.has(key)))) {
      loaded.set(key, set);
    }
    const expected = new Map([...loaded].map(([key, set]) => [key, set.meta?.version ?? 0]));
    const draft = new LexiconDraft(loaded);
    let pool: { words: CandidatePool; replace: boolean } | undefined;
    try {
      for (const outcome of followed.outcomes) {
        applyFeedback(draft, outcome.hits, outcome.signal, (id) => termSets.get(id), now, this.policy);
      }
      if (message && groupId && poolWords) {
        const learned = learnFromMessage(
          draft,
          poolWords,
          { groupId, senderId: message.senderId, words },
          now,
          this.policy,
        );
        pool = { words: learned.pool, replace: false };
        if (learned.needsAging) {
          const whole = await this.loadPool(groupId);
          pool = {
            words: agePool({ totalDocs: learned.pool.totalDocs, words: { ...whole.words, ...learned.pool.words } }),
            replace: true,
          };
        }
        maintainIfDue(draft, groupSet(groupId), now, this.policy);
      } else if (event.kind === EventKind.MemorySummaryWritten && groupId) {
        const p = (event as EventOf<'memory.summary.written'>).payload;
        learnFromSummary(
          draft,
          { groupId, threadId: p.threadId, words: candidateWords(p.summary, 6) },
          now,
          this.policy,
        );
        maintainIfDue(draft, threadSet(groupId, p.threadId), now, this.policy);
      } else if (event.kind === EventKind.MemoryJargonLearned && groupId) {
        const p = (event as EventOf<'memory.jargon.learned'>).payload;
        if (p.status === 'learned') learnJargon(draft, { groupId, term: p.term, meaning: p.meaning }, now, this.policy);
      } else if (control) {
        const command = {
          command: control.command,
          term: control.term,
          requestedBy: control.requestedBy,
          ...(control.aliases ? { aliases: control.aliases } : {}),
          ...(control.weight !== undefined ? { weight: control.weight } : {}),
        };
        applyControl(draft, { scope: control.scope, ownerId: control.ownerId, command }, now, this.policy);
      }
    } catch (error) {
      return this.reject(event, error);
    }
    const commit = draft.commit(now);
    const feedbackMoved =
      feedbackInput !== null &&
      followed.state !== null &&
      JSON.stringify(followed.state) !== JSON.stringify(feedback ?? emptyFeedback());
    const poolMoved = pool !== undefined;
    if (commit.sets.length === 0 && !feedbackMoved && !poolMoved) return;
    await this.store.commit(
      event.id,
      commit,
      expected,
      keywordEvents(commit, event.id, event, now),
      groupId
        ? { groupId, ...(poolMoved ? { pool } : {}), ...(feedbackMoved ? { feedback: followed.state! } : {}) }
        : undefined,
    );
  }

  private groupMessage(event: EventEnvelope): { senderId: string; text: string } | null {
    if (event.kind !== EventKind.MessageObserved && event.kind !== EventKind.MessageDirect) return null;
    const p = (event as EventOf<'message.observed'>).payload;
    if (!event.groupId || p.messageType !== 'group' || p.sender.userId === p.selfId) return null;
    return { senderId: p.sender.userId, text: p.text };
  }

  private feedbackInput(event: EventEnvelope): FeedbackInput | null {
    const kind = event.kind;
    if (kind === EventKind.MessageObserved || kind === EventKind.MessageDirect) {
      const p = (event as EventOf<'message.observed'>).payload;
      return p.sender.userId === p.selfId ? null : { type: 'message', eventId: event.id, senderId: p.sender.userId };
    }
    if (kind === EventKind.DecisionMade) {
      const p = (event as EventOf<'decision.made'>).payload;
      return { type: 'decision', subjectEventId: p.subjectEventId, outcome: p.outcome, hits: p.keywordHits ?? [] };
    }
    if (kind === EventKind.ActionSend) {
      return { type: 'replied', triggerEventId: (event as EventOf<'action.send'>).payload.triggerEventId };
    }
    if (kind === EventKind.EpisodeCompleted) {
      const p = (event as EventOf<'episode.completed'>).payload;
      return { type: 'completed', triggerEventId: p.triggerEventId, outcome: p.outcome };
    }
    return null;
  }

  private async reject(event: EventEnvelope, error: unknown): Promise<void> {
    if (!(error instanceof KeywordError) || error.code === KeywordErrorCode.Conflict) throw error;
    await this.store.commit(event.id, { sets: [], changes: [] }, new Map(), []);
    this.refused.set(error.code, (this.refused.get(error.code) ?? 0) + 1);
  }

  private async loadFeedback(groupId: string): Promise<FeedbackState | null> {
    const json = await this.redis.get(this.keys.keywordFeedback(groupId));
    return json ? (JSON.parse(json) as FeedbackState) : null;
  }

  private async setsOfTerms(termIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (termIds.length === 0) return out;
    const sets = await this.redis.hmget(this.keys.keywordTermIndex, ...termIds);
    termIds.forEach((id, i) => {
      if (sets[i]) out.set(id, sets[i]);
    });
    return out;
  }

  private async loadPoolWords(groupId: string, words: readonly string[]): Promise<CandidatePool> {
    const [total, ...values] = await this.redis.hmget(this.keys.keywordPool(groupId), '#total', ...words);
    const pool: CandidatePool = { totalDocs: Number(total ?? 0), words: {} };
    words.forEach((word, i) => {
      const value = values[i];
      if (value) pool.words[word] = JSON.parse(value) as CandidateWord;
    });
    return pool;
  }

  private async loadPool(groupId: string): Promise<CandidatePool> {
    const raw = await this.redis.hgetall(this.keys.keywordPool(groupId));
    const pool: CandidatePool = { totalDocs: Number(raw['#total'] ?? 0), words: {} };
    for (const [word, value] of Object.entries(raw)) {
      if (word !== '#total') pool.words[word] = JSON.parse(value) as CandidateWord;
    }
    return pool;
  }
}

/**
 * Every key under the world's prefix (prefix cut off), with its content: strings with whether they expire, hashes
 * as sorted entries, streams as their entries' fields in order (entry ids are times, not content).
 */
async function dump(w: World, options: { withEventStreams: boolean } = { withEventStreams: true }) {
  const out: Record<string, unknown> = {};
  let cursor = '0';
  const names: string[] = [];
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${w.prefix}:*`, 'COUNT', 1000);
    cursor = next;
    names.push(...found);
  } while (cursor !== '0');
  for (const key of names.sort()) {
    const name = key.slice(w.prefix.length);
    const type = await redis.type(key);
    if (type === 'string') {
      out[name] = { value: await redis.get(key), expires: (await redis.ttl(key)) > 0 };
    } else if (type === 'hash') {
      out[name] = Object.entries(await redis.hgetall(key)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    } else if (type === 'stream') {
      if (!withStreams(name, options)) continue;
      out[name] = (await redis.xrange(key, '-', '+')).map(([, fields]) => fields);
    } else {
      out[name] = { type };
    }
  }
  return out;
}

const withStreams = (name: string, options: { withEventStreams: boolean }) =>
  options.withEventStreams || !name.startsWith(':events:');

/** The ids of the keyword events appended to the world's log, in order. */
async function appendedIds(w: World): Promise<string[]> {
  const ids: string[] = [];
  for (let p = 0; p < w.keys.partitions; p++) {
    for (const [, fields] of await redis.xrange(w.keys.stream(p), '-', '+')) {
      const json = fields[fields.indexOf('e') + 1]!;
      ids.push((JSON.parse(json) as EventEnvelope).id);
    }
  }
  return ids;
}

async function refusedByCode(metrics: Metrics): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const match of (await metrics.scrape()).matchAll(/qunli_keyword_rejected_total\{code="([^"]+)"[^}]*\} (\d+)/g)) {
    out.set(match[1]!, Number(match[2]));
  }
  return out;
}

/** Every way to cut `n` events into consecutive batches. */
function* splits(n: number): Generator<number[]> {
  for (let mask = 0; mask < 2 ** (n - 1); mask++) {
    const sizes: number[] = [];
    let size = 1;
    for (let i = 0; i < n - 1; i++) {
      if (mask & (1 << i)) {
        sizes.push(size);
        size = 1;
      } else size++;
    }
    sizes.push(size);
    yield sizes;
  }
}

function cut<T>(items: readonly T[], sizes: readonly number[]): T[][] {
  const out: T[][] = [];
  let at = 0;
  for (const size of sizes) {
    out.push(items.slice(at, at + size));
    at += size;
  }
  return out;
}

/** The state before a sequence, the same in every world: some sets, a pool close to aging. */
type Setup = (w: World) => Promise<void>;

/** What a sequence made the lexicon do (one at a time): so a sequence that exercises nothing fails its test. */
interface Exercised {
  changes: Set<string>;
  refused: Set<string>;
  /** The pool of G1 was aged (its total fell). */
  aged: boolean;
  feedbackGroups: number;
}

async function exercised(w: World): Promise<Exercised> {
  const changes = new Set<string>();
  for (let p = 0; p < w.keys.partitions; p++) {
    for (const [, fields] of await redis.xrange(w.keys.stream(p), '-', '+')) {
      const event = JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope;
      if (event.kind === EventKind.KeywordTermChanged) {
        changes.add((event as EventOf<'keyword.term.changed'>).payload.change);
      }
    }
  }
  const total = Number(await redis.hget(w.keys.keywordPool(G1), '#total'));
  const feedback = await redis.exists(w.keys.keywordFeedback(G1), w.keys.keywordFeedback(G2));
  return {
    changes,
    refused: new Set(w.reference.refused.keys()),
    aged: total < BASELINE_TOTAL,
    feedbackGroups: feedback,
  };
}

/** Learn `events` one at a time in one world and batch by batch in another; both end the same, key for key. */
async function expectSameAsOneAtATime(
  events: readonly EventEnvelope[],
  sizes: readonly number[],
  setup: Setup,
  label: string,
): Promise<Exercised> {
  const reference = world(steppedClock());
  await setup(reference);
  await reference.reference.learnAll(events);
  const batched = world(steppedClock());
  await setup(batched);
  for (const batch of cut(events, sizes)) await batched.batched.learn(batch);
  const [expected, actual] = [await dump(reference), await dump(batched)];
  try {
    expect(actual).toEqual(expected);
    expect(await refusedByCode(batched.metrics)).toEqual(reference.reference.refused);
    return await exercised(reference);
  } catch (error) {
    throw new Error(`${label}, batches of ${sizes.join('+')}: ${(error as Error).message}`, { cause: error });
  } finally {
    await deleteKeys(redis, reference.prefix);
    await deleteKeys(redis, batched.prefix);
  }
}

// ---- events ----

let messageNo = 0;

function say(groupId: string | null, sender: string, text: string, type: 'group' | 'private' = 'group') {
  return makeEvent({
    kind: EventKind.MessageObserved,
    groupId,
    source: 'ingress',
    payload: sampleMessage(text, {
      messageType: type,
      messageId: `kb${messageNo++}`,
      selfId: SELF,
      sender: { userId: sender, nickname: sender, card: '', displayName: sender, role: 'member' },
    }),
  });
}

function decide(subject: EventEnvelope, hits: DecisionKeywordHit[], outcome = 'deliberate') {
  return makeEvent({
    kind: EventKind.DecisionMade,
    groupId: subject.groupId,
    source: 'scheduler',
    cause: subject,
    payload: {
      subjectEventId: subject.id,
      outcome,
      reason: 'batch spec',
      features: {},
      keywordHits: hits,
      transitions: [],
    },
  } as Parameters<typeof makeEvent<'decision.made'>>[0]);
}

function reply(subject: EventEnvelope) {
  return makeEvent({
    kind: EventKind.ActionSend,
    groupId: subject.groupId,
    source: 'cognition',
    payload: {
      actionId: `act-${subject.id}`,
      episodeId: `ep-${subject.id}`,
      triggerEventId: subject.id,
      targetType: 'group',
      targetId: subject.groupId ?? '',
      text: '好',
    },
  });
}

function complete(subject: EventEnvelope, outcome: EpisodeOutcome) {
  return makeEvent({
    kind: EventKind.EpisodeCompleted,
    groupId: subject.groupId,
    source: 'cognition',
    payload: {
      episodeId: `ep-${subject.id}`,
      triggerEventId: subject.id,
      outcome,
      steps: 1,
      tokensIn: 1,
      tokensOut: 1,
      durationMs: 1,
    },
  });
}

function summary(groupId: string, threadId: string, text: string) {
  return makeEvent({
    kind: EventKind.MemorySummaryWritten,
    groupId,
    source: 'life-director',
    payload: {
      summaryId: `sum-${messageNo++}`,
      threadId,
      reason: 'every_n',
      summary: text,
      throughOrdinal: 30,
      messageCount: 30,
      participantIds: ['a', 'b'],
      lastMessageAt: new Date(T0).toISOString(),
    },
  });
}

function jargon(groupId: string, term: string, status: 'learned' | 'rejected' = 'learned') {
  return makeEvent({
    kind: EventKind.MemoryJargonLearned,
    groupId,
    source: 'life-director',
    payload: { term, status, meaning: `${term} 的意思`, sightings: 5, users: 3 },
  });
}

function control(
  command: KeywordControlRequestedPayload['command'],
  scope: string,
  ownerId: string,
  term: string,
  groupId: string | null = scope === 'group' ? ownerId : null,
) {
  return makeEvent({
    kind: EventKind.KeywordControlRequested,
    groupId,
    source: 'cli',
    payload: { command, scope, ownerId, term, requestedBy: 'batch-spec' } as KeywordControlRequestedPayload,
  });
}

/** A kind the lexicon does not learn from: it passes by. */
function unrelated(groupId: string) {
  return makeEvent({
    kind: EventKind.ThreadIdle,
    groupId,
    source: 'scheduler',
    payload: { threadId: 't1' },
  } as unknown as Parameters<typeof makeEvent<'thread.idle'>>[0]);
}

function hit(ref: SetRef, term: string, weight = 0.3): DecisionKeywordHit {
  return { termId: termIdOf(ref, term), term, scope: ref.scope, weight };
}

/** G1's pool starts close to aging: it ages when it counts its fifth message (past AGE_AFTER). */
const BASELINE_TOTAL = AGE_AFTER - 4;

/** Sets and a pool every world starts from: a global set with terms, one group's pool close to aging. */
const baseline: Setup = async (w) => {
  const draft = LexiconDraft.empty([GLOBAL_SET, groupSet(G1)]);
  for (const term of ['原神', '火锅', '流星雨']) {
    applyControl(
      draft,
      { scope: 'global', ownerId: '', command: { command: 'add', term, requestedBy: 'setup', weight: 0.5 } },
      T0,
      DEFAULT_LEXICON_POLICY,
    );
  }
  applyControl(
    draft,
    { scope: 'group', ownerId: G1, command: { command: 'add', term: '猫咪', requestedBy: 'setup' } },
    T0,
    DEFAULT_LEXICON_POLICY,
  );
  await w.store.commit('setup', draft.commit(T0), new Map(), []);
  await redis.hset(w.keys.keywordPool(G1), '#total', String(BASELINE_TOTAL));
};

const PHRASES = [
  '今晚开黑吗',
  '开黑',
  '原神新角色',
  '火锅好吃',
  '主板坏了',
  '咖啡店开了',
  '猫咪睡觉',
  '流星雨很美',
  '我们去爬山吧',
];
const MORE_PHRASES = ['电影院见', '篮球比赛', 'apex 开黑', '这个 meme 好笑', '第1条消息，大家好'];
const TERMS = ['开黑', '原神', '火锅', '主板', '猫咪', '流星雨', '爬山', 'meme', 'apex', '咖啡店'];

/**
 * A long event sequence of two groups: messages (one word in most of them, so it turns into chatter), decisions with
 * keyword hits on terms that are, were or never were in a set, replies, completions of every outcome, summaries,
 * jargon, commands (some refused), duplicates and events the lexicon ignores.
 */
function generated(seed: number, length: number): EventEnvelope[] {
  const next = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const events: EventEnvelope[] = [];
  const messages: EventEnvelope[] = [];
  const decided: EventEnvelope[] = [];
  while (events.length < length) {
    const groupId = next() < 0.6 ? G1 : G2;
    const r = next();
    const ofGroup = messages.filter((m) => m.groupId === groupId).slice(-6);
    if (r < 0.5 || ofGroup.length === 0) {
      const sender = next() < 0.05 ? SELF : pick(['a', 'b', 'c', 'd']);
      const text = [pick(PHRASES), ...(next() < 0.5 ? [pick([...PHRASES, ...MORE_PHRASES])] : [])].join('，');
      const m = say(groupId, sender, text);
      events.push(m);
      messages.push(m);
    } else if (r < 0.65) {
      const subject = pick(ofGroup);
      const sets = [groupSet(groupId), GLOBAL_SET];
      const hits = Array.from({ length: 1 + Math.floor(next() * 2) }, () => hit(pick(sets), pick(TERMS)));
      events.push(decide(subject, hits, next() < 0.85 ? 'deliberate' : 'ignore'));
      decided.push(subject);
    } else if (r < 0.73 && decided.length > 0) {
      events.push(reply(pick(decided.slice(-4))));
    } else if (r < 0.8 && decided.length > 0) {
      events.push(
        complete(pick(decided.slice(-4)), pick(['replied', 'no_reply', 'failed', 'cancelled', 'superseded'])),
      );
    } else if (r < 0.84) {
      events.push(summary(groupId, pick(['t1', 't2']), `讨论了${pick(TERMS)}和${pick(TERMS)}`));
    } else if (r < 0.87) {
      events.push(jargon(groupId, pick([...TERMS, '芋圆', 'x'.repeat(40)]), next() < 0.8 ? 'learned' : 'rejected'));
    } else if (r < 0.95) {
      const c = next();
      if (c < 0.15) events.push(control('pin', 'thread', 'no-group-part', pick(TERMS), groupId));
      else if (c < 0.3) events.push(control('delete', 'group', groupId, '从没有过'));
      else if (c < 0.45) events.push(control('add', 'global', '', pick(TERMS)));
      else {
        const command = pick(['pin', 'suppress', 'add', 'delete'] as const);
        events.push(control(command, 'group', groupId, pick(TERMS)));
      }
    } else if (r < 0.98 && events.length > 0) {
      events.push(pick(events.slice(-10)));
    } else {
      events.push(unrelated(groupId));
    }
  }
  return events;
}

describe('keyword learning in batches, against one event at a time', () => {
  const promotedThenFedBack = (() => {
    const m1 = say(G1, 'a', '今晚开黑吗');
    const m2 = say(G1, 'b', '开黑的人呢');
    const m3 = say(G1, 'a', '有人开黑吗');
    const d = decide(m3, [hit(groupSet(G1), '开黑'), hit(GLOBAL_SET, '原神')]);
    return [m1, m2, m3, d, reply(m3), say(G1, 'a', '好耶几点'), complete(m3, 'replied')];
  })();

  const commandsAndARefusal = (() => {
    const add = control('add', 'global', '', 'meme');
    const m = say(G2, 'c', '原神新角色');
    return [
      add,
      control('delete', 'group', G2, '从没有过'),
      control('pin', 'thread', 'no-group-part', 'x', G2),
      m,
      decide(m, [hit(GLOBAL_SET, '原神'), hit(GLOBAL_SET, 'meme')]),
      complete(m, 'no_reply'),
      add,
      control('suppress', 'group', G1, '猫咪'),
    ];
  })();

  const agingSummaryJargon = [
    say(G1, 'a', '火锅好吃'),
    say(G1, 'b', '猫咪睡觉'),
    say(G1, 'c', '火锅好吃 主板坏了'),
    summary(G1, 't1', '讨论了显卡和主板'),
    say(G1, 'a', '周末爬山 火锅'),
    jargon(G1, '芋圆'),
    say(G1, 'b', '电影院见'),
    say(G1, SELF, '我也要火锅'),
    say(null, 'a', '私聊火锅', 'private'),
    unrelated(G1),
  ];

  it.each([
    ['a promoted word, then feedback on it', promotedThenFedBack, ['promoted', 'reinforced'], []],
    [
      'commands, refusals and a duplicate',
      commandsAndARefusal,
      ['added', 'weakened', 'suppressed'],
      [KeywordErrorCode.NotFound, KeywordErrorCode.InvalidScope],
    ],
    ['a pool aging mid-batch, a summary, jargon, the bot itself', agingSummaryJargon, ['added', 'promoted'], []],
  ])(
    '%s: the same under every split into batches',
    async (label, events, changes, refused) => {
      let tried = 0;
      let did: Exercised | undefined;
      for (const sizes of splits(events.length)) {
        did = await expectSameAsOneAtATime(events, sizes, baseline, label);
        tried++;
      }
      expect(tried).toBe(2 ** (events.length - 1));
      expect([...did!.changes]).toEqual(expect.arrayContaining(changes));
      expect([...did!.refused].sort()).toEqual([...refused].sort());
      if (label.includes('aging')) expect(did!.aged).toBe(true);
    },
    120_000,
  );

  const generatedDid = { changes: new Set<string>(), refused: new Set<string>() };

  it.each([1, 2, 3, 4])(
    'a generated sequence (seed %i): the same in batches of every size from 1 to 40',
    async (seed) => {
      const events = generated(seed, 200);
      const next = prng(seed * 7919);
      const splitsTried: number[][] = [[events.length], Array<number>(events.length).fill(1)];
      for (const size of [2, 3, 7, 16, 40]) {
        splitsTried.push(
          Array.from({ length: Math.ceil(events.length / size) }, (_, i) => Math.min(size, events.length - i * size)),
        );
      }
      for (let k = 0; k < 4; k++) {
        const sizes: number[] = [];
        for (let left = events.length; left > 0;) {
          const size = Math.min(left, 1 + Math.floor(next() * 40));
          sizes.push(size);
          left -= size;
        }
        splitsTried.push(sizes);
      }
      let did: Exercised | undefined;
      for (const sizes of splitsTried) did = await expectSameAsOneAtATime(events, sizes, baseline, `seed ${seed}`);
      for (const change of did!.changes) generatedDid.changes.add(change);
      for (const code of did!.refused) generatedDid.refused.add(code);
      expect([...did!.changes]).toEqual(expect.arrayContaining(['promoted', 'added', 'reinforced', 'decayed']));
      expect(did!.aged).toBe(true);
      expect(did!.feedbackGroups).toBe(2);
    },
    120_000,
  );

  it('the generated sequences between them exercise every change and refusal', () => {
    expect([...generatedDid.changes].sort()).toEqual(
      ['added', 'decayed', 'deleted', 'expired', 'pinned', 'promoted', 'reinforced', 'suppressed', 'weakened'].sort(),
    );
    expect([...generatedDid.refused].sort()).toEqual([KeywordErrorCode.InvalidScope, KeywordErrorCode.NotFound]);
  });
});

/** A log whose `appendAll` first runs `before` (another writer, a crash) and then, unless that threw, appends. */
function hooked(log: EventLog, before: () => Promise<void>, after: () => Promise<void> = async () => {}): EventLog {
  const appendAll: EventLog['appendAll'] = async (events, also) => {
    await before();
    const ids = await log.appendAll(events, also);
    await after();
    return ids;
  };
  return Object.assign(Object.create(log) as EventLog, { appendAll });
}

/** A connection that records the name of every command sent on it. */
function counted(): { connection: Redis; commands: string[] } {
  const connection = testRedis();
  const commands: string[] = [];
  const send = connection.sendCommand.bind(connection);
  connection.sendCommand = (command: { name: string }, stream?: unknown) => {
    commands.push(command.name.toLowerCase());
    return send(command as Parameters<typeof send>[0], stream as Parameters<typeof send>[1]);
  };
  return { connection, commands };
}

describe('keyword batches when another writer or a crash gets in the way', () => {
  it('writes nothing when another writer moves a set mid-batch, and the retry ends as one at a time would', async () => {
    const m = say(G1, 'a', '原神新角色');
    const events = [
      m,
      decide(m, [hit(GLOBAL_SET, '原神')]),
      complete(m, 'no_reply'),
      control('add', 'global', '', 'meme'),
      say(G1, 'b', '火锅好吃'),
    ];
    // Another partition's consumer pins a global term while this batch is being learned.
    const other = control('pin', 'global', '', '火锅');
    const reference = world(frozenClock());
    await baseline(reference);
    await reference.reference.learnAll([other, ...events]);
    const onlyOther = world(frozenClock());
    await baseline(onlyOther);
    await onlyOther.reference.learnAll([other]);

    let interfered = false;
    const w: World = world(frozenClock(), {
      log: (log) =>
        hooked(log, async () => {
          if (interfered) return;
          interfered = true;
          await w.reference.learnAll([other]);
        }),
    });
    await baseline(w);
    const conflict = await w.batched.learn(events).then(
      () => null,
      (error: unknown) => error,
    );
    expect(conflict).toBeInstanceOf(KeywordConflict);
    expect(conflict).toMatchObject({ code: KeywordErrorCode.Conflict });
    expect(interfered).toBe(true);
    // Nothing of the batch: no done marker, pool, feedback or set change; the other writer's change only.
    expect(await dump(w, { withEventStreams: false })).toEqual(await dump(onlyOther, { withEventStreams: false }));

    await w.batched.learn(events);
    expect(await dump(w, { withEventStreams: false })).toEqual(await dump(reference, { withEventStreams: false }));
    // The first attempt's events stay in the log as superseded versions; every event of the retry is the reference's.
    const ids = new Set(await appendedIds(w));
    for (const id of await appendedIds(reference)) expect(ids).toContain(id);
  });

  it('after a crash between the append and the commit, learns the events again and appends the same ids', async () => {
    const events = generated(11, 60);
    const reference = world(frozenClock());
    await baseline(reference);
    await reference.reference.learnAll(events);

    const crashing = world(frozenClock(), {
      log: (log) =>
        hooked(
          log,
          async () => {},
          () => Promise.reject(new Error('crashed after the append')),
        ),
    });
    await baseline(crashing);
    const before = await dump(crashing, { withEventStreams: false });
    await expect(crashing.batched.learn(events)).rejects.toThrow('crashed after the append');
    expect(await dump(crashing, { withEventStreams: false })).toEqual(before);
    const crashedIds = await appendedIds(crashing);
    expect(crashedIds.length).toBeGreaterThan(10);

    // The process comes back (a log that works), the bus hands the entries again, cut differently this time.
    const restarted = new KeywordsConsumer(
      new KeywordLexiconStore(redis, crashing.keys, crashing.log),
      frozenClock(),
      new Metrics('scheduler', false),
    );
    for (const batch of cut(events, [7, 13, 40])) await restarted.learn(batch);
    expect(await dump(crashing, { withEventStreams: false })).toEqual(
      await dump(reference, { withEventStreams: false }),
    );
    const referenceIds = await appendedIds(reference);
    expect(new Set(await appendedIds(crashing))).toEqual(new Set(referenceIds));
    for (const id of crashedIds) expect(referenceIds).toContain(id);
  });

  it('learns the batches several partitions hand in together in one learning, each in log order (ADR 0045)', async () => {
    const events = generated(31, 120);
    // Two partitions' batches: G2's events, and the rest (G1's and those of no group).
    const first = events.filter((event) => event.groupId === G2);
    const second = events.filter((event) => event.groupId !== G2);
    expect(first.length).toBeGreaterThan(10);
    expect(second.length).toBeGreaterThan(10);
    const reference = world(frozenClock());
    await baseline(reference);
    await reference.reference.learnAll([...first, ...second]);

    const w = world(frozenClock());
    await baseline(w);
    const commitBatch = w.store.commitBatch.bind(w.store);
    let commits = 0;
    w.store.commitBatch = (...args) => {
      commits++;
      return commitBatch(...args);
    };
    const entries = (list: EventEnvelope[], partition: number) =>
      list.map((event, i) => ({ partition, entryId: `1-${i}`, event, deliveries: 1 }));
    await Promise.all([w.batched.handleBatch(entries(first, 1)), w.batched.handleBatch(entries(second, 2))]);
    expect(commits).toBe(1);
    expect(await dump(w, { withEventStreams: false })).toEqual(await dump(reference, { withEventStreams: false }));
  });

  it('takes a constant number of round trips per batch, however many events it holds', async () => {
    const { connection, commands } = counted();
    try {
      const events = generated(21, 160);
      const batchedWorld = world(frozenClock(), { redis: connection });
      await baseline(batchedWorld);
      // Scripts loaded (a first EVALSHA may be answered NOSCRIPT and sent again as EVAL).
      await batchedWorld.batched.learn(events.slice(0, 5));
      const perBatch: { events: number; commands: string[] }[] = [];
      for (const batch of cut(events.slice(5), [5, 20, 60, 70])) {
        commands.length = 0;
        await batchedWorld.batched.learn(batch);
        perBatch.push({ events: batch.length, commands: [...commands] });
      }
      for (const { events: n, commands: sent } of perBatch) {
        const scripts = sent.filter((c) => c === 'evalsha' || c === 'eval').length;
        const appends = sent.filter((c) => c === 'multi').length;
        const others = sent.filter((c) => !['evalsha', 'eval', 'multi', 'xadd', 'exec'].includes(c));
        // At most three reads and the commit; the derived events appended per partition (a group's and the global's).
        expect({ n, scripts: scripts <= 4, appends: appends <= 2, others }).toEqual({
          n,
          scripts: true,
          appends: true,
          others: [],
        });
      }

      const referenceWorld = world(frozenClock(), { redis: connection });
      await baseline(referenceWorld);
      await referenceWorld.reference.learnAll(events.slice(0, 5));
      commands.length = 0;
      await referenceWorld.reference.learnAll(events.slice(-70));
      const oneAtATime = commands.filter((c) => c !== 'xadd' && c !== 'exec').length;
      const batched = perBatch.at(-1)!.commands.filter((c) => c !== 'xadd' && c !== 'exec').length;
      expect(oneAtATime).toBeGreaterThan(20 * batched);
    } finally {
      connection.disconnect();
    }
  });
});
