import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { StreamContext } from '@app/event-bus';
import { initialState, type GroupState } from '../decisions/group-state.js';
import { GroupStateStore } from './group-state.store.js';

const keys = new Keyspace('q', 4);

/** A Redis that only answers GET, from `stored`, and counts the calls. */
function fakeRedis(stored: Map<string, string>): Redis & { gets: number } {
  const redis = {
    gets: 0,
    get(key: string): Promise<string | null> {
      redis.gets++;
      return Promise.resolve(stored.get(key) ?? null);
    },
  };
  return redis as unknown as Redis & { gets: number };
}

function busy(marker: string): GroupState {
  return { ...initialState(), ended: [marker] };
}

/** One handled event: load, save, then the reader's commit outcome and after-commit tasks. */
async function turn(
  store: GroupStateStore,
  groupId: string,
  next: GroupState,
  applied: boolean | 'throws',
): Promise<GroupState> {
  const ctx = new StreamContext('scheduler', 1, '1-0', 1, keys);
  const before = await store.load(ctx, groupId);
  store.stageSave(ctx, groupId, next, false);
  if (applied === 'throws') return before; // the handler or the commit failed: no after-commit tasks
  ctx.applied = applied;
  await ctx.runAfterCommit(() => undefined);
  return before;
}

describe('the group state cache', () => {
  const group = '300001';
  const key = keys.groupState(1, group);

  it('reads a group from Redis once, then the state its own commit wrote', async () => {
    const stored = new Map([[key, JSON.stringify(busy('a'))]]);
    const redis = fakeRedis(stored);
    const store = new GroupStateStore(redis);
    await store.start(1);
    expect((await turn(store, group, busy('b'), true)).ended).toEqual(['a']);
    expect((await turn(store, group, busy('c'), true)).ended).toEqual(['b']);
    expect((await turn(store, group, busy('d'), true)).ended).toEqual(['c']);
    expect(redis.gets).toBe(1);
  });

  it('reads Redis again after a handling that failed or whose commit was a duplicate', async () => {
    const stored = new Map([[key, JSON.stringify(busy('a'))]]);
    const redis = fakeRedis(stored);
    const store = new GroupStateStore(redis);
    await store.start(1);
    await turn(store, group, busy('b'), true);
    stored.set(key, JSON.stringify(busy('b')));
    // The commit never happened: the next event sees what Redis holds, not the unwritten state.
    expect((await turn(store, group, busy('x'), 'throws')).ended).toEqual(['b']);
    expect((await turn(store, group, busy('y'), false)).ended).toEqual(['b']);
    expect((await turn(store, group, busy('c'), true)).ended).toEqual(['b']);
    expect(redis.gets).toBe(3);
  });

  it('forgets a partition when it stops owning it', async () => {
    const stored = new Map([[key, JSON.stringify(busy('a'))]]);
    const redis = fakeRedis(stored);
    const store = new GroupStateStore(redis);
    await store.start(1);
    await turn(store, group, busy('b'), true);
    await store.stop(1);
    stored.set(key, JSON.stringify(busy('elsewhere')));
    await store.start(1);
    expect((await turn(store, group, busy('c'), true)).ended).toEqual(['elsewhere']);
    expect(redis.gets).toBe(2);
  });
});
