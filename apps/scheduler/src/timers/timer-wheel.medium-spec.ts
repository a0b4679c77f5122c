import type { Redis } from 'ioredis';
import { EventKind, Keyspace } from '@app/contracts';
import type { StreamContext } from '@app/event-bus';
import { Clock, Metrics } from '@app/platform';
import { deleteKeys, eventually, testConfig, testRedis, uniquePrefix } from '@app/testing';
import type { TimerSpec } from '../decisions/group-state.js';
import { TIMER_SWEEP_MS, TimerWheel } from './timer-wheel.js';
import { TimerStore } from './timer.store.js';

const PARTITION = 1;

let redis: Redis;
let keys: Keyspace;
let store: TimerStore;
let wheel: TimerWheel;
let polls: number;
/** When each poll started (`performance.now()`, the clock the wheel's beat is a multiple of). */
let pollTimes: number[];
/** Awaited after each poll's read when set: lets a test hold a poll open after it read. */
let pollGate: Promise<void> | undefined;

function spec(timerId: string, dueAt: number, urgent = false): TimerSpec {
  return { timerId, purpose: 'debounce', dueAt, subjectEventId: `ev-${timerId}`, ...(urgent ? { urgent } : {}) };
}

/** Set a timer as a scheduler turn does: staged in a commit, then the commit's after-commit tasks. */
async function commitTimer(timer: TimerSpec): Promise<void> {
  const staged: { command: string; keys: string[]; args: (string | number)[] }[] = [];
  const after: (() => Promise<void> | void)[] = [];
  const ctx = {
    partition: PARTITION,
    stage: (command: string, k: string[], ...args: (string | number)[]) => staged.push({ command, keys: k, args }),
    afterCommit: (task: () => Promise<void> | void) => after.push(task),
  } as unknown as StreamContext;
  store.stageSet(ctx, 'g-1', timer, Date.now());
  const multi = redis.multi();
  for (const s of staged) multi.call(s.command, ...s.keys, ...s.args);
  await multi.exec();
  for (const task of after) await task();
}

/** Set a timer behind this process' back, as another scheduler's commit would. */
async function foreignTimer(timer: TimerSpec): Promise<void> {
  await redis.zadd(keys.timers(PARTITION), timer.dueAt, timer.timerId);
  await redis.hset(
    keys.timerData(PARTITION),
    timer.timerId,
    JSON.stringify({ ...timer, setAt: Date.now(), groupId: 'g-1' }),
  );
}

/** Wait until `holds`, checking every 5 ms (the specs time the wheel), or fail after `timeoutMs`. */
const until = (what: string, holds: () => boolean | Promise<boolean>, timeoutMs = 5000) =>
  eventually(what, async () => await holds(), timeoutMs, 5);

const sameIds = (expected: string[]) => async () =>
  JSON.stringify((await firedIds()).sort()) === JSON.stringify(expected);

async function firedIds(): Promise<string[]> {
  const entries = await redis.xrange(keys.stream(PARTITION), '-', '+');
  return entries
    .filter(([, fields]) => fields[fields.indexOf('k') + 1] === EventKind.TimerFired)
    .map(
      ([, fields]) =>
        (JSON.parse(fields[fields.indexOf('e') + 1]!) as { payload: { timerId: string } }).payload.timerId,
    );
}

beforeEach(async () => {
  keys = new Keyspace(uniquePrefix('wheel'), 4);
  redis = testRedis();
  store = new TimerStore(redis, keys);
  polls = 0;
  pollTimes = [];
  pollGate = undefined;
  const due = store.due.bind(store);
  store.due = async (...args) => {
    polls++;
    pollTimes.push(performance.now());
    const found = await due(...args);
    if (pollGate) await pollGate;
    return found;
  };
  wheel = new TimerWheel(
    store,
    new Clock(),
    testConfig('scheduler', { QUNLI_TIMER_POLL_MS: 20 }),
    new Metrics('test', false),
  );
});

afterEach(async () => {
  await wheel.stop(PARTITION);
  await deleteKeys(redis, keys.prefix);
  await redis.quit();
});

describe('TimerWheel on real Redis', () => {
  it('sleeps while it knows of no timer: an idle partition is polled about once a sweep, not every poll interval', async () => {
    await wheel.start(PARTITION);
    await new Promise((resolve) => setTimeout(resolve, TIMER_SWEEP_MS * 2.5));
    // Every 20 ms would be about 125 polls; one at start and one per sweep is 3.
    expect(polls).toBeGreaterThanOrEqual(2);
    expect(polls).toBeLessThanOrEqual(5);
  });

  it('wakes for a timer this process sets and fires it at its due time, long before the next sweep', async () => {
    await wheel.start(PARTITION);
    await until('the first poll', () => polls === 1);
    // Let that poll end: the wheel is asleep until its sweep when the timer is set.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const setAt = Date.now();
    await commitTimer(spec('soon', setAt + 150));
    await until('the timer to fire', sameIds(['soon']));
    const firedAfter = Date.now() - setAt;
    expect(firedAfter).toBeGreaterThanOrEqual(150);
    expect(firedAfter).toBeLessThan(150 + TIMER_SWEEP_MS / 2);
    // One poll at start, one at the due time.
    expect(polls).toBe(2);
  });

  it('sleeps only until the earliest timer its poll saw', async () => {
    await foreignTimer(spec('later', Date.now() + 300));
    await wheel.start(PARTITION);
    await until('the timer to fire', sameIds(['later']));
    expect(polls).toBe(2);
  });

  it('keeps a timer it hears of while a poll is running, though that poll may have read before it landed', async () => {
    let open!: () => void;
    pollGate = new Promise((resolve) => (open = resolve));
    await wheel.start(PARTITION);
    await until('the first poll', () => polls === 1);
    // The first poll read an empty partition and is held: this timer lands, and is heard of, while it runs.
    pollGate = undefined;
    const setAt = Date.now();
    await commitTimer(spec('during', setAt + 50));
    open();
    await until('the timer to fire', sameIds(['during']));
    expect(Date.now() - setAt).toBeLessThan(TIMER_SWEEP_MS / 2);
  });

  it('fires a timer another process set at the next sweep at the latest', async () => {
    await wheel.start(PARTITION);
    await until('the first poll', () => polls === 1);
    await foreignTimer(spec('foreign', Date.now()));
    await until('the timer to fire', sameIds(['foreign']), TIMER_SWEEP_MS * 2);
    expect(polls).toBe(2);
  });

  it('fires each timer exactly once, whoever set it', async () => {
    await wheel.start(PARTITION);
    await until('the first poll', () => polls === 1);
    await foreignTimer(spec('foreign', Date.now()));
    await commitTimer(spec('own', Date.now() + 20));
    await until('both timers to fire', sameIds(['foreign', 'own']), TIMER_SWEEP_MS * 3);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await firedIds()).sort()).toEqual(['foreign', 'own']);
    expect(await redis.zcard(keys.timers(PARTITION))).toBe(0);
  });

  it('fires more than a batch of due timers without waiting between batches', async () => {
    const now = Date.now();
    for (let i = 0; i < 450; i++) await foreignTimer(spec(`t${String(i).padStart(3, '0')}`, now - 1000 + i));
    await wheel.start(PARTITION);
    await until('every timer to fire', async () => (await firedIds()).length === 450, TIMER_SWEEP_MS / 2);
  });

  it('drops a timer whose description is gone, and fires the others of the poll', async () => {
    await redis.zadd(keys.timers(PARTITION), Date.now() - 10, 'orphan');
    await foreignTimer(spec('whole', Date.now() - 5));
    await wheel.start(PARTITION);
    await until('the timer to fire', sameIds(['whole']));
    await until('the orphan to go', async () => (await redis.zcard(keys.timers(PARTITION))) === 0);
  });

  describe('on a beat of 200 ms (ADR 0046)', () => {
    const gap = 200;
    let beatWheel: TimerWheel;

    /** Start a wheel with this beat, and return once its first poll is a beat behind it. */
    async function startOnBeat(clock = new Clock()): Promise<void> {
      beatWheel = new TimerWheel(
        store,
        clock,
        testConfig('scheduler', { QUNLI_TIMER_POLL_MS: gap }),
        new Metrics('test', false),
      );
      await beatWheel.start(PARTITION);
      await until('the first poll', () => polls === 1);
      await new Promise((resolve) => setTimeout(resolve, gap));
    }

    /** Wait until 50 ms past a beat; a timer set now and due in 100 ms is due halfway between two beats. */
    async function justAfterABeat(): Promise<void> {
      const phase = performance.now() % gap;
      await new Promise((resolve) => setTimeout(resolve, (gap + 50 - phase) % gap));
    }

    /** How far from a beat (a multiple of the gap, either side) the poll that fired the timer started. */
    const offBeat = () => {
      const phase = pollTimes.at(-1)! % gap;
      return Math.min(phase, gap - phase);
    };

    afterEach(async () => {
      await beatWheel.stop(PARTITION);
    });

    it('fires an ordinary timer at the first beat after it is due, with the polls of every partition', async () => {
      await startOnBeat();
      await justAfterABeat();
      await commitTimer(spec('ambient', Date.now() + 100));
      await until('the timer to fire', sameIds(['ambient']));
      // At its due time the poll would start ≈ 152 ms into the beat, 48 ms from the next.
      expect(offBeat()).toBeLessThan(25);
    });

    it('fires a timer someone waits on (urgent) at its due time, not at the beat', async () => {
      await startOnBeat();
      await justAfterABeat();
      const setAt = performance.now();
      await commitTimer(spec('direct', Date.now() + 100, true));
      await until('the timer to fire', sameIds(['direct']));
      expect(pollTimes.at(-1)! - setAt).toBeGreaterThanOrEqual(100);
      expect(offBeat()).toBeGreaterThan(25);
    });

    it('fires every timer at its due time when the clock is so compressed that one beat is seconds of product time', async () => {
      const clock = new Clock(10, Date.now());
      await startOnBeat(clock);
      await justAfterABeat();
      await commitTimer(spec('compressed', clock.nowMs() + clock.product(100)));
      await until('the timer to fire', sameIds(['compressed']));
      expect(offBeat()).toBeGreaterThan(25);
    });
  });

  it('stops: a stopped partition fires nothing', async () => {
    await wheel.start(PARTITION);
    await until('the first poll', () => polls === 1);
    await wheel.stop(PARTITION);
    await commitTimer(spec('after-stop', Date.now()));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await firedIds()).toEqual([]);
  });
});
