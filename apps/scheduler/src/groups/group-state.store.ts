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
    Object.keys(state.threads ?? {}).length === 0
  );
}

/**
 * The scheduler's per-group state (`Keyspace.groupState`, JSON), the messages it holds until it decides about
 * them (`Keyspace.heldMessages`) and the group's recent-message window (`Keyspace.groupRecent`). Reads happen
 * before a decision; every write is staged in the handler's commit.
 */
@Injectable()
export class GroupStateStore implements PartitionTask {
  /**
   * Groups of each owned partition known to have no state key. Only this process writes a partition's group state
   * while it holds the lease, so "no key" stays true until its own commit writes one; the set is dropped whenever
   * the partition's ownership changes. It spares the GET for the many groups that only chat.
   */
  private readonly empty = new Map<number, Set<string>>();
  /**
   * The committed state of recently handled groups of owned partitions, by `partition␀groupId`, so the next event of
   * a busy group skips the GET and the JSON parse of its whole state. The same ownership argument as `empty`
   * holds: while this process holds the lease nobody else writes the key, and the entries of a partition go when
   * its ownership changes. `load` takes an entry out; only a commit that applied puts the new state back, so a
   * handler that failed (or whose commit turned out a duplicate) leaves the next event to read Redis.
   */
  private readonly cached = new Map<string, GroupState>();

  constructor(@Inject(REDIS) private readonly redis: Redis) {}

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

  async load(ctx: StreamContext, groupId: string): Promise<GroupState> {
    if (this.empty.get(ctx.partition)?.has(groupId)) return initialState();
    const key = `${ctx.partition}\u0000${groupId}`;
    const cached = this.cached.get(key);
    if (cached) {
      this.cached.delete(key);
      return cached;
    }
    const raw = await this.redis.get(ctx.keys.groupState(ctx.partition, groupId));
    return raw === null ? initialState() : { ...initialState(), ...(JSON.parse(raw) as Partial<GroupState>) };
  }

  /** Stage the state write; `wasEmpty` when the group had no state key before this event. */
  stageSave(ctx: StreamContext, groupId: string, state: GroupState, wasEmpty: boolean): void {
    const key = ctx.keys.groupState(ctx.partition, groupId);
    const empty = this.empty.get(ctx.partition);
    if (isIdle(state) && state.ended.length === 0) {
      if (!wasEmpty) ctx.stage('DEL', [key]);
      // Known empty only once the commit that empties it has happened.
      ctx.afterCommit(() => void empty?.add(groupId));
      return;
    }
    empty?.delete(groupId);
    if (isIdle(state)) ctx.stage('SET', [key], JSON.stringify(state), 'EX', IDLE_STATE_TTL_SECONDS);
    else ctx.stage('SET', [key], JSON.stringify(state));
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
