import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { ContextMessage, EventEnvelope, MessagePayload } from '@app/contracts';
import type { PartitionTask, StreamContext } from '@app/event-bus';
import { REDIS } from '@app/platform';
import { initialState, type GroupState } from '../decisions/group-state.js';

/** Messages kept per group for prompts (the ADR asks for the last 8–12). */
export const RECENT_KEPT = 20;
export const CONTEXT_SIZE = 12;

/**
 * Group states kept parsed in memory, across all owned partitions (least recently handled dropped first). A state
 * carries its live threads with their recent tokens, so this bounds the cache at a few tens of MB.
 */
export const STATES_CACHED = 2048;

/** A group whose state holds nothing live keeps it this long (real seconds), for late commands of ended episodes. */
const IDLE_STATE_TTL_SECONDS = 6 * 3600;

export function contextLine(event: EventEnvelope<MessagePayload>): ContextMessage {
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

function isIdle(state: GroupState): boolean {
  return (
    Object.keys(state.events).length === 0 &&
    Object.keys(state.batches).length === 0 &&
    Object.keys(state.snoozed).length === 0 &&
    Object.keys(state.episodes).length === 0 &&
    Object.keys(state.timers).length === 0 &&
    Object.keys(state.threads ?? {}).length === 0 &&
    !state.unpublished?.length
  );
}

/** The maps of a group state and the prefix of their entries' hash fields. */
const MAPS = [
  ['events', 'e:'],
  ['batches', 'b:'],
  ['snoozed', 's:'],
  ['episodes', 'p:'],
  ['timers', 't:'],
  ['threads', 'h:'],
] as const satisfies readonly (readonly [keyof GroupState, string])[];
type MapName = (typeof MAPS)[number][0];
const MAP_OF_PREFIX = new Map<string, MapName>(MAPS.map(([name, prefix]) => [prefix, name]));

/** Reads the state hash, or — a group untouched since before ADR-0025 — the old JSON string, in one round trip. */
const LOAD = `
local fields = redis.call('HGETALL', KEYS[1])
if #fields > 0 then return fields end
local legacy = redis.call('GET', KEYS[2])
if legacy then return { '=legacy', legacy } end
return fields
`;

/** A state's hash fields, every one of them (a group written for the first time, or converted from the old key). */
function allFields(state: GroupState): (string | number)[] {
  const out: (string | number)[] = [];
  for (const [name, prefix] of MAPS) {
    for (const [id, entry] of Object.entries(state[name] ?? {})) out.push(prefix + id, JSON.stringify(entry));
  }
  out.push('actor', JSON.stringify(state.actor), 'ended', JSON.stringify(state.ended));
  if (state.unpublished?.length) out.push('unpublished', JSON.stringify(state.unpublished));
  return out;
}

/**
 * What changed between the committed state and the new one, as hash fields to write and to delete. `evolve`
 * copies only what an effect touches, so an entry that is the same object in both is unchanged and is not written.
 */
export function changedFields(before: GroupState, after: GroupState): { set: (string | number)[]; del: string[] } {
  const set: (string | number)[] = [];
  const del: string[] = [];
  for (const [name, prefix] of MAPS) {
    const was: Record<string, unknown> = before[name] ?? {};
    const now: Record<string, unknown> = after[name] ?? {};
    if (was === now) continue;
    for (const id in now) if (was[id] !== now[id]) set.push(prefix + id, JSON.stringify(now[id]));
    for (const id in was) if (!(id in now)) del.push(prefix + id);
  }
  if (before.actor !== after.actor) set.push('actor', JSON.stringify(after.actor));
  if (before.ended !== after.ended) set.push('ended', JSON.stringify(after.ended));
  if (before.unpublished !== after.unpublished) {
    if (after.unpublished?.length) set.push('unpublished', JSON.stringify(after.unpublished));
    else if (before.unpublished?.length) del.push('unpublished');
  }
  return { set, del };
}

function fromFields(fields: string[]): GroupState {
  const state = initialState();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const field = fields[i]!;
    const value = JSON.parse(fields[i + 1]!) as unknown;
    if (field === 'actor') state.actor = value as GroupState['actor'];
    else if (field === 'ended') state.ended = value as string[];
    else if (field === 'unpublished') state.unpublished = value as GroupState['unpublished'];
    else {
      const map = MAP_OF_PREFIX.get(field.slice(0, 2));
      if (map) (state[map] as Record<string, unknown>)[field.slice(2)] = value;
    }
  }
  return state;
}

type LoadingRedis = Redis & { qunliLoadGroupState(fields: string, legacy: string): Promise<string[]> };

/**
 * The scheduler's per-group state (`Keyspace.groupStateFields`: a hash with one JSON field per live event, batch,
 * snooze, episode, timer and thread, plus the actor and the ended list), the messages it holds until it decides
 * about them (`Keyspace.heldMessages`) and the group's recent-message window (`Keyspace.groupRecent`). Reads happen
 * before a decision; every write is staged in the handler's commit, and writes only the fields that changed
 * (ADR-0025): a busy group's state is a few kB, and writing it whole for every event was most of the bytes the
 * scheduler sent to Redis.
 */
@Injectable()
export class GroupStateStore implements PartitionTask {
  /**
   * Groups of each owned partition known to have no state key. Only this process writes a partition's group state
   * while it holds the lease, so "no key" stays true until its own commit writes one; the set is dropped whenever
   * the partition's ownership changes. It spares the read for the many groups that only chat.
   */
  private readonly empty = new Map<number, Set<string>>();
  /**
   * The committed state of recently handled groups of owned partitions, by `partition␀groupId`, so the next event of
   * a busy group skips the read and the JSON parse of its whole state. The same ownership argument as `empty`
   * holds: while this process holds the lease nobody else writes the key, and the entries of a partition go when
   * its ownership changes. `load` takes an entry out; only a commit that applied puts the new state back, so a
   * handler that failed (or whose commit turned out a duplicate) leaves the next event to read Redis.
   */
  private readonly cached = new Map<string, GroupState>();
  /** States loaded from the pre-ADR-0025 key: their save writes every field and drops the old key. */
  private readonly legacy = new WeakSet<GroupState>();

  constructor(@Inject(REDIS) private readonly redis: Redis) {
    this.redis.defineCommand('qunliLoadGroupState', { numberOfKeys: 2, lua: LOAD });
  }

  start(partition: number): Promise<void> {
    this.empty.set(partition, new Set());
    return Promise.resolve();
  }

  stop(partition: number): Promise<void> {
    this.empty.delete(partition);
    const prefix = `${partition}\u0000`;
    for (const key of this.cached.keys()) if (key.startsWith(prefix)) this.cached.delete(key);
    return Promise.resolve();
  }

  /** The committed state kept in memory for this group, if there is one (`load` would return it without a read). */
  peek(ctx: StreamContext, groupId: string): GroupState | undefined {
    return this.cached.get(`${ctx.partition}\u0000${groupId}`);
  }

  /** The group's committed state. Pass it, unchanged, to `stageSave` as what the new state is written against. */
  async load(ctx: StreamContext, groupId: string): Promise<GroupState> {
    if (this.empty.get(ctx.partition)?.has(groupId)) return initialState();
    const key = `${ctx.partition}\u0000${groupId}`;
    const cached = this.cached.get(key);
    if (cached) {
      this.cached.delete(key);
      return cached;
    }
    const fields = await (this.redis as LoadingRedis).qunliLoadGroupState(
      ctx.keys.groupStateFields(ctx.partition, groupId),
      ctx.keys.groupState(ctx.partition, groupId),
    );
    if (fields[0] === '=legacy') {
      const state = { ...initialState(), ...(JSON.parse(fields[1]!) as Partial<GroupState>) };
      this.legacy.add(state);
      return state;
    }
    return fromFields(fields);
  }

  /**
   * Stage the state write: the fields that differ from `committed` (what `load` returned). `wasEmpty` when the group
   * had no state before this event.
   */
  stageSave(ctx: StreamContext, groupId: string, committed: GroupState, state: GroupState, wasEmpty: boolean): void {
    const key = ctx.keys.groupStateFields(ctx.partition, groupId);
    const empty = this.empty.get(ctx.partition);
    const legacy = this.legacy.has(committed);
    if (legacy) ctx.stage('DEL', [ctx.keys.groupState(ctx.partition, groupId)]);
    if (isIdle(state) && state.ended.length === 0) {
      if (!wasEmpty) ctx.stage('DEL', [key]);
      // Known empty only once the commit that empties it has happened.
      ctx.afterCommit(() => void empty?.add(groupId));
      return;
    }
    empty?.delete(groupId);
    if (legacy || wasEmpty) {
      if (!wasEmpty) ctx.stage('DEL', [key]);
      ctx.stage('HSET', [key], ...allFields(state));
    } else {
      const { set, del } = changedFields(committed, state);
      if (del.length > 0) ctx.stage('HDEL', [key], ...del);
      if (set.length > 0) ctx.stage('HSET', [key], ...set);
    }
    // An idle group's state expires (late commands of ended episodes still find it for a while); a live one never.
    if (isIdle(state)) ctx.stage('EXPIRE', [key], IDLE_STATE_TTL_SECONDS);
    else if (isIdle(committed) && !wasEmpty && !legacy) ctx.stage('PERSIST', [key]);
    // Only while the partition is owned (`start` ran): `empty` exists exactly then.
    if (empty) ctx.afterCommit(() => this.keep(ctx, groupId, state));
  }

  private keep(ctx: StreamContext, groupId: string, state: GroupState): void {
    if (ctx.applied !== true || !this.empty.has(ctx.partition)) return;
    const key = `${ctx.partition}\u0000${groupId}`;
    this.cached.delete(key);
    this.cached.set(key, state);
    if (this.cached.size > STATES_CACHED) this.cached.delete(this.cached.keys().next().value!);
  }

  async heldMessages(ctx: StreamContext, ids: string[]): Promise<Map<string, EventEnvelope<MessagePayload>>> {
    const out = new Map<string, EventEnvelope<MessagePayload>>();
    if (ids.length === 0) return out;
    const raw = await this.redis.hmget(ctx.keys.heldMessages(ctx.partition), ...ids);
    raw.forEach((json, i) => {
      if (json !== null) out.set(ids[i]!, JSON.parse(json) as EventEnvelope<MessagePayload>);
    });
    return out;
  }

  stageHold(ctx: StreamContext, event: EventEnvelope<MessagePayload>): void {
    ctx.stage('HSET', [ctx.keys.heldMessages(ctx.partition)], event.id, JSON.stringify(event));
  }

  stageRelease(ctx: StreamContext, ids: string[]): void {
    if (ids.length > 0) ctx.stage('HDEL', [ctx.keys.heldMessages(ctx.partition)], ...ids);
  }

  /** The group's recent messages, newest first (read it early; `contextOf` picks the prompt's window). */
  async recent(ctx: StreamContext, groupId: string): Promise<ContextMessage[]> {
    const window = await this.redis.lrange(ctx.keys.groupRecent(ctx.partition, groupId), 0, RECENT_KEPT - 1);
    return window.map((line) => JSON.parse(line) as ContextMessage);
  }

  /** A prompt's context: the newest `CONTEXT_SIZE` lines of `recent` that are not the episode's own, oldest first. */
  static contextOf(recent: readonly ContextMessage[], without: ReadonlySet<string>): ContextMessage[] {
    return recent
      .filter((line) => !without.has(line.eventId))
      .slice(0, CONTEXT_SIZE)
      .reverse();
  }

  stageRecent(ctx: StreamContext, groupId: string, line: ContextMessage): void {
    const recent = ctx.keys.groupRecent(ctx.partition, groupId);
    ctx.stage('LPUSH', [recent], JSON.stringify(line));
    ctx.stage('LTRIM', [recent], 0, RECENT_KEPT - 1);
  }
}
