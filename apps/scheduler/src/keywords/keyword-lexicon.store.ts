import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, type EventEnvelope } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { REDIS } from '@app/platform';
import type { CandidatePool, CandidateWord } from './candidate-pool.rules.js';
import type { FeedbackState } from './keyword-feedback.rules.js';
import { KeywordError, KeywordErrorCode } from './keyword.errors.js';
import type { LexiconRead, LexiconReads, LexiconWrites } from './learning-batch.js';
import type { DraftCommit, LoadedSet, SetMeta } from './lexicon-draft.js';
import { parseSetKey, type LexiconTerm } from './lexicon.rules.js';

/** How long a done marker keeps a handled event from being handled again (real seconds: longer than any retry). */
const DONE_TTL_SECONDS = 7 * 24 * 3600;
/** Version announcements kept (each lookup reads only the new ones; a restarted lookup loads every set). */
const VERSIONS_KEPT = 10_000;
/** The pool hash's field holding the group's message count (no candidate word starts with '#': they hold letters). */
const POOL_TOTAL = '#total';

export interface VersionAnnouncement {
  /** Stream entry id. */
  id: string;
  setKey: string;
  version: number;
}

/**
 * The lexicon's live state in Redis (`Keyspace.keyword*`, one hash tag): each set's terms and meta, the term → set
 * index, the groups' candidate pools and feedback, and the stream announcing new versions. `commit` first appends
 * the change's events to the log, then writes the state, the announcement and the done marker in one MULTI: a
 * crash in between leaves no marker, so the event is handled again and appends the same (derived) event ids.
 */
@Injectable()
export class KeywordLexiconStore {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly log: EventLog,
  ) {
    // EVALSHA: the script's text travels only when Redis does not have it yet.
    if (!('qunliKeywordCommit' in redis)) redis.defineCommand('qunliKeywordCommit', { lua: COMMIT });
    if (!('qunliKeywordRead' in redis)) redis.defineCommand('qunliKeywordRead', { lua: READ_BATCH });
    if (!('qunliKeywordCommitBatch' in redis)) redis.defineCommand('qunliKeywordCommitBatch', { lua: COMMIT_BATCH });
  }

  /**
   * A learning batch's reads in one command (one round trip, one consistent snapshot): done markers, the groups'
   * feedback, sets (meta and terms), pool words or whole pools, and term index entries.
   */
  async readBatch(reads: LexiconReads): Promise<LexiconRead> {
    const keys: string[] = [this.keys.keywordSets, this.keys.keywordTermIndex];
    const plan = {
      done: reads.doneIds.map((id) => keys.push(this.keys.keywordDone(id))),
      feedback: reads.feedbackGroups.map((groupId) => keys.push(this.keys.keywordFeedback(groupId))),
      sets: reads.setKeys.map((setKey) => [setKey, keys.push(this.keys.keywordTerms(setKey))]),
      pools: [...reads.pools].map(([groupId, words]) => [
        keys.push(this.keys.keywordPool(groupId)),
        words === 'whole' ? [] : [POOL_TOTAL, ...words],
        words === 'whole' ? 1 : 0,
      ]),
      index: reads.termIds,
    };
    const reading = this.redis as Redis & {
      qunliKeywordRead(numberOfKeys: number, ...args: string[]): Promise<ReadReply>;
    };
    const [done, feedback, metas, terms, pools, index] = await reading.qunliKeywordRead(
      keys.length,
      ...keys,
      JSON.stringify(plan),
    );
    const read: LexiconRead = {
      done: new Map(),
      feedback: new Map(),
      sets: new Map(),
      pools: new Map(),
      index: new Map(),
    };
    reads.doneIds.forEach((id, i) => read.done.set(id, done[i] === 1));
    reads.feedbackGroups.forEach((groupId, i) => {
      const json = feedback[i];
      read.feedback.set(groupId, json ? (JSON.parse(json) as FeedbackState) : null);
    });
    reads.setKeys.forEach((setKey, i) => {
      const meta = metas[i];
      const flat = terms[i] ?? [];
      const loaded = new Map<string, LexiconTerm>();
      for (let f = 0; f < flat.length; f += 2) loaded.set(flat[f]!, JSON.parse(flat[f + 1]!) as LexiconTerm);
      read.sets.set(setKey, {
        ref: parseSetKey(setKey),
        meta: meta ? (JSON.parse(meta) as SetMeta) : null,
        terms: loaded,
      });
    });
    [...reads.pools].forEach(([groupId, asked], i) => {
      const values = pools[i] ?? [];
      const words = new Map<string, CandidateWord>();
      let totalDocs = 0;
      if (asked === 'whole') {
        for (let f = 0; f < values.length; f += 2) {
          if (values[f] === POOL_TOTAL) totalDocs = Number(values[f + 1]);
          else words.set(values[f]!, JSON.parse(values[f + 1]!) as CandidateWord);
        }
      } else {
        totalDocs = Number(values[0] ?? 0);
        asked.forEach((word, w) => {
          const value = values[w + 1];
          if (value) words.set(word, JSON.parse(value) as CandidateWord);
        });
      }
      read.pools.set(groupId, { totalDocs, words, asked });
    });
    reads.termIds.forEach((id, i) => read.index.set(id, index[i] ?? null));
    return read;
  }

  /**
   * Append a learning batch's events, then write its one commit (terms, index, metas, announcements in log order,
   * feedback, pools, every done marker) in one script that first checks every changed set is still at the version
   * the batch read. When another process moved one on meanwhile, nothing is written and `KeywordConflict` is thrown:
   * the bus hands the entries again and they are learned on fresh state. A crash between the append and the script
   * leaves no marker: the events are learned again and append the same (derived) ids.
   */
  async commitBatch(writes: LexiconWrites, description: string): Promise<void> {
    if (writes.events.length > 0) await this.log.appendAll(writes.events);
    const keys: string[] = [this.keys.keywordSets, this.keys.keywordTermIndex, this.keys.keywordVersions];
    const plan = {
      sets: writes.sets.map((set) => ({
        key: keys.push(this.keys.keywordTerms(set.setKey)),
        set: set.setKey,
        expected: set.expected,
        meta: JSON.stringify(set.meta),
        upserts: set.upserts.flatMap((t) => [t.termId, JSON.stringify(t)]),
        index: set.upserts.flatMap((t) => [t.termId, set.setKey]),
        removals: set.removals,
      })),
      versions: writes.versions.map(({ setKey, version }) => [setKey, String(version)]),
      writes: writes.feedback.map(({ groupId, state }) => [
        keys.push(this.keys.keywordFeedback(groupId)),
        JSON.stringify(state),
      ]),
      pools: writes.pools.map((pool) => ({
        key: keys.push(this.keys.keywordPool(pool.groupId)),
        replace: pool.replace,
        fields: [POOL_TOTAL, String(pool.totalDocs), ...pool.words.flatMap(([w, v]) => [w, JSON.stringify(v)])],
      })),
      done: writes.done.map((id) => keys.push(this.keys.keywordDone(id))),
      maxlen: VERSIONS_KEPT,
      ttl: DONE_TTL_SECONDS,
    };
    const committing = this.redis as Redis & {
      qunliKeywordCommitBatch(numberOfKeys: number, ...args: (string | number)[]): Promise<number>;
    };
    const written = await committing.qunliKeywordCommitBatch(keys.length, ...keys, JSON.stringify(plan));
    if (written !== 1) throw new KeywordConflict(description);
  }

  async isDone(id: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.keywordDone(id))) === 1;
  }

  async loadSets(setKeys: readonly string[]): Promise<Map<string, LoadedSet>> {
    const unique = [...new Set(setKeys)];
    const out = new Map<string, LoadedSet>();
    if (unique.length === 0) return out;
    const tx = this.redis.multi();
    tx.hmget(this.keys.keywordSets, ...unique);
    for (const key of unique) tx.hgetall(this.keys.keywordTerms(key));
    const results = (await tx.exec()) ?? [];
    const metas = (results[0]?.[1] ?? []) as (string | null)[];
    unique.forEach((setKey, i) => {
      const raw = (results[i + 1]?.[1] ?? {}) as Record<string, string>;
      const meta = metas[i];
      out.set(setKey, {
        ref: parseSetKey(setKey),
        meta: meta ? (JSON.parse(meta) as SetMeta) : null,
        terms: new Map(Object.entries(raw).map(([id, json]) => [id, JSON.parse(json) as LexiconTerm])),
      });
    });
    return out;
  }

  /** Every set's meta (the lookup's start, and its periodic check for a missed announcement). */
  async allSets(): Promise<Map<string, SetMeta>> {
    const raw = await this.redis.hgetall(this.keys.keywordSets);
    return new Map(Object.entries(raw).map(([key, json]) => [key, JSON.parse(json) as SetMeta]));
  }

  /** The newest announcement id ('0-0' when none), so a lookup can load first and follow from there. */
  async lastAnnouncement(): Promise<string> {
    const [last] = (await this.redis.xrevrange(this.keys.keywordVersions, '+', '-', 'COUNT', 1)) as [
      string,
      string[],
    ][];
    return last?.[0] ?? '0-0';
  }

  /** Announcements after `afterId`, waiting up to `blockMs` (on its own connection: this one blocks). */
  async announcementsAfter(connection: Redis, afterId: string, blockMs: number): Promise<VersionAnnouncement[]> {
    const reply = await connection.xread('COUNT', 500, 'BLOCK', blockMs, 'STREAMS', this.keys.keywordVersions, afterId);
    const entries = reply?.[0]?.[1] ?? [];
    return entries.map(([id, fields]) => {
      const get = (name: string) => fields[fields.indexOf(name) + 1] ?? '';
      return { id, setKey: get('set'), version: Number(get('version')) };
    });
  }

  /**
   * Append the change's events, then write it (terms, index, meta, announcement, pool, feedback, done marker) in
   * one script that first checks every changed set is still at the version the change was computed from. When
   * another process moved one on meanwhile (two groups' feedback on one global term), nothing is written and
   * `KeywordConflict` is thrown: the bus handles the event again on fresh state.
   */
  async commit(
    doneId: string,
    commit: DraftCommit,
    expected: ReadonlyMap<string, number>,
    events: EventEnvelope[],
    group?: {
      groupId: string;
      /** The pool's changed words and total; `replace`: the whole pool after aging. */
      pool?: { words: CandidatePool; replace: boolean };
      feedback?: FeedbackState;
    },
  ): Promise<void> {
    if (events.length > 0) await this.log.appendAll(events);
    const keys: string[] = [this.keys.keywordSets, this.keys.keywordTermIndex, this.keys.keywordVersions];
    const plan = {
      sets: commit.sets.map((set) => {
        keys.push(this.keys.keywordTerms(set.setKey));
        return {
          key: keys.length,
          set: set.setKey,
          expected: expected.get(set.setKey) ?? 0,
          meta: JSON.stringify(set.meta),
          version: set.changed ? String(set.meta.version) : '',
          upserts: set.upserts.flatMap((t) => [t.termId, JSON.stringify(t)]),
          removals: set.removals,
        };
      }),
      writes: [] as [number, string][],
      pool: null as { key: number; replace: boolean; fields: string[] } | null,
      done: 0,
      maxlen: VERSIONS_KEPT,
      ttl: DONE_TTL_SECONDS,
    };
    if (group?.pool) {
      const { words, replace } = group.pool;
      plan.pool = {
        key: keys.push(this.keys.keywordPool(group.groupId)),
        replace,
        fields: [
          POOL_TOTAL,
          String(words.totalDocs),
          ...Object.entries(words.words).flatMap(([w, v]) => [w, JSON.stringify(v)]),
        ],
      };
    }
    if (group?.feedback) {
      plan.writes.push([keys.push(this.keys.keywordFeedback(group.groupId)), JSON.stringify(group.feedback)]);
    }
    plan.done = keys.push(this.keys.keywordDone(doneId));
    const committing = this.redis as Redis & {
      qunliKeywordCommit(numberOfKeys: number, ...args: (string | number)[]): Promise<number>;
    };
    const written = await committing.qunliKeywordCommit(keys.length, ...keys, JSON.stringify(plan));
    if (written !== 1) throw new KeywordConflict(doneId);
  }
}

/** `readBatch`'s reply: done flags, feedback JSON, set metas, each set's HGETALL, each pool's reply, index entries. */
type ReadReply = [number[], (string | null)[], (string | null)[], string[][], (string | null)[][], (string | null)[]];

/** Another process changed a set this change was computed from; handled again, it is computed on fresh state. */
export class KeywordConflict extends KeywordError {
  constructor(id: string) {
    super(KeywordErrorCode.Conflict, `keyword sets changed while ${id} was being handled`, { id, transient: true });
  }
}

// Both commits first: every set the plan changes must still be at the version the change was computed from
// (KEYS[1] holds the sets' metas), else the script returns 0 having written nothing.
const VERSIONS_HOLD = `for _, s in ipairs(plan.sets) do
  local meta = redis.call('HGET', KEYS[1], s.set)
  local version = 0
  if meta then version = cjson.decode(meta).version end
  if version ~= s.expected then return 0 end
end
`;

// KEYS: sets meta, term index, versions stream, then each set's terms, pool/feedback keys, the done marker.
// ARGV[1]: the plan (JSON). Returns 0, writing nothing, when a set is not at its expected version.
const COMMIT = `
local plan = cjson.decode(ARGV[1])
${VERSIONS_HOLD}for _, s in ipairs(plan.sets) do
  local terms = KEYS[s.key]
  for i = 1, #s.upserts, 2 do
    redis.call('HSET', terms, s.upserts[i], s.upserts[i + 1])
    redis.call('HSET', KEYS[2], s.upserts[i], s.set)
  end
  for _, id in ipairs(s.removals) do
    redis.call('HDEL', terms, id)
    redis.call('HDEL', KEYS[2], id)
  end
  redis.call('HSET', KEYS[1], s.set, s.meta)
  if s.version ~= '' then
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', plan.maxlen, '*', 'set', s.set, 'version', s.version)
  end
end
for _, w in ipairs(plan.writes) do redis.call('SET', KEYS[w[1]], w[2]) end
if plan.pool ~= cjson.null then
  if plan.pool.replace then redis.call('DEL', KEYS[plan.pool.key]) end
  for i = 1, #plan.pool.fields, 2 do redis.call('HSET', KEYS[plan.pool.key], plan.pool.fields[i], plan.pool.fields[i + 1]) end
end
redis.call('SET', KEYS[plan.done], '1', 'EX', plan.ttl)
return 1
`;

// KEYS: sets meta, term index, then the keys the plan names. ARGV[1]: the plan (JSON). HMGET in slices: Lua's
// unpack has a stack limit.
const READ_BATCH = `
local plan = cjson.decode(ARGV[1])
local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, 500 do
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + 499, #fields)))
    for j = 1, #part do out[#out + 1] = part[j] end
  end
  return out
end
local done, feedback, names, terms, pools = {}, {}, {}, {}, {}
for i, k in ipairs(plan.done) do done[i] = redis.call('EXISTS', KEYS[k]) end
for i, k in ipairs(plan.feedback) do feedback[i] = redis.call('GET', KEYS[k]) end
for i, s in ipairs(plan.sets) do
  names[i] = s[1]
  terms[i] = redis.call('HGETALL', KEYS[s[2]])
end
local metas = hmget(KEYS[1], names)
for i, p in ipairs(plan.pools) do
  if p[3] == 1 then pools[i] = redis.call('HGETALL', KEYS[p[1]]) else pools[i] = hmget(KEYS[p[1]], p[2]) end
end
return {done, feedback, metas, terms, pools, hmget(KEYS[2], plan.index)}
`;

// KEYS: sets meta, term index, versions stream, then the keys the plan names. ARGV[1]: the plan (JSON). Returns 0,
// writing nothing, when a set is not at its expected version.
const COMMIT_BATCH = `
local plan = cjson.decode(ARGV[1])
${VERSIONS_HOLD}local function many(command, key, args)
  for i = 1, #args, 200 do redis.call(command, key, unpack(args, i, math.min(i + 199, #args))) end
end
for _, s in ipairs(plan.sets) do
  many('HSET', KEYS[s.key], s.upserts)
  many('HSET', KEYS[2], s.index)
  many('HDEL', KEYS[s.key], s.removals)
  many('HDEL', KEYS[2], s.removals)
  redis.call('HSET', KEYS[1], s.set, s.meta)
end
for _, v in ipairs(plan.versions) do
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', plan.maxlen, '*', 'set', v[1], 'version', v[2])
end
for _, w in ipairs(plan.writes) do redis.call('SET', KEYS[w[1]], w[2]) end
for _, p in ipairs(plan.pools) do
  if p.replace then redis.call('DEL', KEYS[p.key]) end
  many('HSET', KEYS[p.key], p.fields)
end
for _, k in ipairs(plan.done) do redis.call('SET', KEYS[k], '1', 'EX', plan.ttl) end
return 1
`;
