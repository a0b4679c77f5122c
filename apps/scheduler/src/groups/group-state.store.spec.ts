import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { StreamContext } from '@app/event-bus';
import type { AttentionPolicy } from '../decisions/attention.policy.js';
import { initialState, type GroupState } from '../decisions/group-state.js';
import { fired, message, Scenario, T0 } from '../decisions/decider.fixture.js';
import { changedFields, GroupStateStore } from './group-state.store.js';

const keys = new Keyspace('q', 4);

/**
 * A Redis holding strings and hashes in memory: it answers the store's load script and applies the commands a
 * commit would run, so a test sees exactly what a real commit leaves behind.
 */
class MemoryRedis {
  readonly strings = new Map<string, string>();
  readonly hashes = new Map<string, Map<string, string>>();
  readonly ttl = new Map<string, number>();
  loads = 0;
  written: { command: string; args: (string | number)[] }[] = [];

  defineCommand(): void {}

  qunliLoadGroupState(fields: string, legacy: string): Promise<string[]> {
    this.loads++;
    const hash = this.hashes.get(fields);
    if (hash && hash.size > 0) return Promise.resolve([...hash].flat());
    const old = this.strings.get(legacy);
    return Promise.resolve(old === undefined ? [] : ['=legacy', old]);
  }

  apply(ctx: StreamContext): void {
    for (const {
      command,
      keys: [key],
      args,
    } of ctx.staged) {
      this.written.push({ command, args });
      const hash = this.hashes.get(key!) ?? new Map<string, string>();
      switch (command) {
        case 'HSET':
          for (let i = 0; i < args.length; i += 2) hash.set(String(args[i]), String(args[i + 1]));
          this.hashes.set(key!, hash);
          break;
        case 'HDEL':
          for (const field of args) hash.delete(String(field));
          break;
        case 'DEL':
          this.hashes.delete(key!);
          this.strings.delete(key!);
          this.ttl.delete(key!);
          break;
        case 'EXPIRE':
          this.ttl.set(key!, Number(args[0]));
          break;
        case 'PERSIST':
          this.ttl.delete(key!);
          break;
        default:
          throw new Error(`unexpected staged command ${command}`);
      }
    }
  }

  /** Bytes of field values written since the last call. */
  bytesWritten(): number {
    let bytes = 0;
    for (const { command, args } of this.written) {
      if (command === 'HSET') for (let i = 1; i < args.length; i += 2) bytes += String(args[i]).length;
    }
    this.written = [];
    return bytes;
  }
}

/** Attention that weighs every ambient message, so each waits out its sender's quiet period first. */
const weighsAmbient: AttentionPolicy = {
  considersAmbient: true,
  judge: () => ({ outcome: 'skip', reason: 'skipped: test', features: {} }),
};

function storeOn(redis: MemoryRedis): GroupStateStore {
  return new GroupStateStore(redis as unknown as Redis);
}

/** One handled event: load, save `next` against what was loaded, then the commit's outcome. */
async function turn(
  store: GroupStateStore,
  redis: MemoryRedis,
  groupId: string,
  next: (loaded: GroupState) => GroupState,
  applied: boolean | 'throws' = true,
): Promise<GroupState> {
  const ctx = new StreamContext('scheduler', 1, '1-0', 1, keys);
  const loaded = await store.load(ctx, groupId);
  store.stageSave(ctx, groupId, loaded, next(loaded), isBlank(loaded));
  if (applied === 'throws') return loaded; // the handler or the commit failed: nothing written, no after-commit tasks
  if (applied) redis.apply(ctx);
  ctx.applied = applied;
  await ctx.runAfterCommit(() => undefined);
  return loaded;
}

function isBlank(state: GroupState): boolean {
  return JSON.stringify(state) === JSON.stringify(initialState());
}

function busy(marker: string): GroupState {
  return { ...initialState(), ended: [marker] };
}

describe('the group state store', () => {
  const group = '300001';
  const fieldsKey = keys.groupStateFields(1, group);

  it('writes only the fields that changed and reads back exactly the state it saved', async () => {
    const redis = new MemoryRedis();
    const scenario = new Scenario(weighsAmbient);
    let committed = initialState();
    const save = async (state: GroupState) => {
      const ctx = new StreamContext('scheduler', 1, '1-0', 1, keys);
      storeOn(redis).stageSave(ctx, group, committed, state, isBlank(committed));
      redis.apply(ctx);
      committed = state;
      // A store with nothing cached reads it back from the hash.
      const reread = await storeOn(redis).load(ctx, group);
      expect(reread).toEqual(JSON.parse(JSON.stringify(state)));
    };
    const sizes: number[] = [];
    for (let i = 0; i < 12; i++) {
      scenario.run({
        event: message(`u${i}`, `今天的第${i}条消息，大家怎么看`, { at: T0 + i * 400 }),
        at: T0 + i * 400,
      });
      await save(scenario.state);
      sizes.push(redis.bytesWritten());
    }
    const whole = JSON.stringify(committed).length;
    // The debounce timers fire: batches, timers and events go, and so do their fields.
    for (const timer of Object.keys(scenario.state.timers)) {
      const spec = scenario.all.find((e) => e.type === 'timerSet' && e.timer.timerId === timer);
      if (spec?.type !== 'timerSet') continue;
      scenario.run({ event: fired(spec.timer), at: spec.timer.dueAt });
      await save(scenario.state);
    }
    // Late in a busy group, one message writes a small part of the whole state.
    expect(sizes[sizes.length - 1]!).toBeLessThan(whole / 2);
    const entries = (['events', 'batches', 'snoozed', 'episodes', 'timers', 'threads'] as const).reduce(
      (n, map) => n + Object.keys(committed[map]).length,
      0,
    );
    expect(redis.hashes.get(fieldsKey)?.size).toBe(entries + 2);
  });

  it('finds the differences by identity, as evolve leaves untouched entries', () => {
    const before: GroupState = {
      ...initialState(),
      timers: { a: { purpose: 'debounce', dueAt: 1 }, b: { purpose: 'debounce', dueAt: 2 } },
    };
    const after: GroupState = {
      ...before,
      timers: { a: before.timers.a!, c: { purpose: 'deadline', dueAt: 3 } },
      ended: ['x'],
    };
    const { set, del } = changedFields(before, after);
    expect(set).toEqual(['t:c', JSON.stringify(after.timers.c), 'ended', '["x"]']);
    expect(del).toEqual(['t:b']);
  });

  it('keeps the unpublished records in a field of their own, written when they change and gone when published', async () => {
    const redis = new MemoryRedis();
    const record = {
      subjectEventId: 'm1',
      correlationId: 'm1',
      actorIds: ['40001'],
      priority: 5,
      at: T0,
      transitions: [{ seq: 1, from: 'captured', to: 'classified', reason: 'classified: ambient', forced: false }],
      threads: [],
      timersScheduled: [{ timerId: 'debounce:m1', purpose: 'debounce', dueAt: new Date(T0).toISOString() }],
    } satisfies NonNullable<GroupState['unpublished']>[number];
    const waiting: GroupState = { ...busy('e1'), unpublished: [record] };
    await turn(storeOn(redis), redis, group + '9', () => waiting);
    expect(JSON.parse(redis.hashes.get(keys.groupStateFields(1, group + '9'))!.get('unpublished')!)).toEqual([record]);
    expect(await storeOn(redis).load(new StreamContext('scheduler', 1, '1-0', 1, keys), group + '9')).toEqual(waiting);
    // A turn that leaves them alone does not write them; the turn that publishes them deletes the field.
    expect(changedFields(waiting, { ...waiting, ended: ['e2'] }).set).toEqual(['ended', '["e2"]']);
    expect(changedFields(waiting, { ...waiting, unpublished: [] })).toEqual({ set: [], del: ['unpublished'] });
    // A state holding nothing but unpublished records is not idle: it never expires with them.
    const only: GroupState = { ...initialState(), unpublished: [record] };
    await turn(storeOn(redis), redis, group + '8', () => only);
    expect(redis.ttl.has(keys.groupStateFields(1, group + '8'))).toBe(false);
  });

  it('converts a state written as one JSON string before the hash, and drops the old key', async () => {
    const redis = new MemoryRedis();
    redis.strings.set(keys.groupState(1, group), JSON.stringify(busy('old')));
    const store = storeOn(redis);
    await store.start(1);
    expect((await turn(store, redis, group, () => busy('new'))).ended).toEqual(['old']);
    expect(redis.strings.has(keys.groupState(1, group))).toBe(false);
    expect(redis.hashes.get(fieldsKey)?.get('ended')).toBe('["new"]');
    expect(await storeOn(redis).load(new StreamContext('scheduler', 1, '1-0', 1, keys), group)).toEqual(busy('new'));
  });

  it('lets an idle state expire, keeps a live one, and deletes an empty one', async () => {
    const redis = new MemoryRedis();
    const store = storeOn(redis);
    await store.start(1);
    await turn(store, redis, group, () => busy('a'));
    expect(redis.ttl.get(fieldsKey)).toBeGreaterThan(0);
    await turn(store, redis, group, (s) => ({ ...s, timers: { t: { purpose: 'debounce', dueAt: 5 } } }));
    expect(redis.ttl.has(fieldsKey)).toBe(false);
    await turn(store, redis, group, () => initialState());
    expect(redis.hashes.has(fieldsKey)).toBe(false);
  });

  it('reads a group from Redis once, then the state its own commit wrote', async () => {
    const redis = new MemoryRedis();
    const store = storeOn(redis);
    await store.start(1);
    await turn(store, redis, group, () => busy('a'));
    expect((await turn(store, redis, group, () => busy('b'))).ended).toEqual(['a']);
    expect((await turn(store, redis, group, () => busy('c'))).ended).toEqual(['b']);
    expect((await turn(store, redis, group, () => busy('d'))).ended).toEqual(['c']);
    expect(redis.loads).toBe(1);
  });

  it('reads Redis again after a handling that failed or whose commit was a duplicate', async () => {
    const redis = new MemoryRedis();
    const store = storeOn(redis);
    await store.start(1);
    await turn(store, redis, group, () => busy('a'));
    await turn(store, redis, group, () => busy('b'));
    // The commit never happened: the next event sees what Redis holds, not the unwritten state.
    expect((await turn(store, redis, group, () => busy('x'), 'throws')).ended).toEqual(['b']);
    expect((await turn(store, redis, group, () => busy('y'), false)).ended).toEqual(['b']);
    expect((await turn(store, redis, group, () => busy('c'))).ended).toEqual(['b']);
    expect(redis.loads).toBe(3);
  });

  it('forgets a partition when it stops owning it', async () => {
    const redis = new MemoryRedis();
    const store = storeOn(redis);
    await store.start(1);
    await turn(store, redis, group, () => busy('a'));
    await turn(store, redis, group, () => busy('b'));
    await store.stop(1);
    redis.hashes.get(fieldsKey)!.set('ended', '["elsewhere"]');
    await store.start(1);
    expect((await turn(store, redis, group, () => busy('c'))).ended).toEqual(['elsewhere']);
    expect(redis.loads).toBe(2);
  });
});
