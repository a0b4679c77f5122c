import { ConsumerGroup, EventKind, makeEvent, type EpisodeControlRecord } from '@app/contracts';
import type { Redis } from 'ioredis';
import { SEAL_FIELD, sealHolds } from '@app/event-bus';
import { REDIS } from '@app/platform';
import { CognitionHarness, GROUP } from '../../../../test/cognition/cognition.harness.js';
import type { EpisodeState } from './episode-state.js';
import { EpisodeStateStore } from './episode-state.store.js';

let h: CognitionHarness;
let store: EpisodeStateStore;
let n = 0;

beforeAll(async () => {
  h = await CognitionHarness.start({}, 'store');
  store = h.app.get(EpisodeStateStore);
}, 60_000);

afterAll(async () => {
  await h?.close();
});

/** A state the store only serialises: enough of one to commit and read back. */
function stateOf(episodeId: string): EpisodeState {
  return { episodeId, groupId: GROUP, status: 'thinking', step: 0, appliedSeq: 1 } as unknown as EpisodeState;
}

const nextId = () => `ep_store_${++n}`;
const partition = () => h.keys.partitionOf(GROUP);

async function writeControl(episodeId: string, record: EpisodeControlRecord): Promise<string> {
  const json = JSON.stringify(record);
  await h.redis.set(h.keys.episodeControl(partition(), episodeId), json);
  return json;
}

function interrupt(episodeId: string, seq: number, stopped = false): EpisodeControlRecord {
  return {
    seq,
    stopped,
    latest: { episodeId, command: 'interrupt', seq, reason: 'new messages', eventIds: ['e1'] },
  };
}

describe('EpisodeStateStore', () => {
  it('opens an episode in one read: its state, done when only its done marker is left, null when unknown', async () => {
    const unknown = nextId();
    expect(await store.open(GROUP, unknown)).toBeNull();

    const done = nextId();
    await h.redis.set(h.keys.episodeDone(partition(), done), '1');
    expect(await store.open(GROUP, done)).toBe('done');

    const known = nextId();
    expect(await store.commit(stateOf(known), 0, [], { acts: false, final: false })).toMatchObject({
      kind: 'committed',
      rev: 1,
    });
    expect(await store.open(GROUP, known)).toEqual({ state: stateOf(known), rev: 1 });
    expect(await store.load(GROUP, known)).toEqual({ state: stateOf(known), rev: 1 });
  });

  it('returns the control record as the commit read it', async () => {
    const id = nextId();
    expect(await store.commit(stateOf(id), 0, [], { acts: false, final: false })).toEqual({
      kind: 'committed',
      rev: 1,
      control: null,
    });
    const json = await writeControl(id, interrupt(id, 2));
    expect(await store.commit(stateOf(id), 1, [], { acts: false, final: false })).toEqual({
      kind: 'committed',
      rev: 2,
      control: json,
    });
  });

  it('yields to an interrupt newer than the given seq and writes nothing; commits past older ones', async () => {
    const id = nextId();
    await store.commit(stateOf(id), 0, [], { acts: false, final: false });
    const json = await writeControl(id, interrupt(id, 3));
    const streamLength = await h.redis.xlen(h.keys.stream(partition()));
    expect(await store.commit(stateOf(id), 1, [], { acts: true, final: true, yieldAfterSeq: 2 })).toEqual({
      kind: 'yielded',
      control: json,
    });
    expect((await store.load(GROUP, id))?.rev).toBe(1);
    expect(await h.redis.exists(h.keys.episodeDone(partition(), id))).toBe(0);
    expect(await h.redis.xlen(h.keys.stream(partition()))).toBe(streamLength);
    // The interrupt is applied (seq 3): nothing to yield to.
    expect(await store.commit(stateOf(id), 1, [], { acts: true, final: true, yieldAfterSeq: 3 })).toMatchObject({
      kind: 'committed',
      rev: 2,
    });
  });

  it('refuses an acting commit of a stopped episode before it would yield, and never yields to other commands', async () => {
    const stopped = nextId();
    await store.commit(stateOf(stopped), 0, [], { acts: false, final: false });
    await writeControl(stopped, interrupt(stopped, 3, true));
    expect(await store.commit(stateOf(stopped), 1, [], { acts: true, final: true, yieldAfterSeq: 1 })).toEqual({
      kind: 'stopped',
    });

    const resumed = nextId();
    await store.commit(stateOf(resumed), 0, [], { acts: false, final: false });
    await writeControl(resumed, {
      seq: 4,
      stopped: false,
      latest: { episodeId: resumed, command: 'resume', seq: 4, reason: 'timer', cause: 'timer' },
    });
    expect(await store.commit(stateOf(resumed), 1, [], { acts: true, final: true, yieldAfterSeq: 1 })).toMatchObject({
      kind: 'committed',
    });
  });

  it("stores a step's events sealed, so no reader validates them again; a changed byte breaks the seal", async () => {
    const id = nextId();
    const started = makeEvent({
      kind: EventKind.EpisodeStarted,
      groupId: GROUP,
      source: 'cognition',
      createdAt: new Date(),
      payload: {
        episodeId: id,
        triggerEventId: 'trigger-1',
        model: 'replyer',
        plannerModel: 'planner',
        deadline: new Date(Date.now() + 60_000).toISOString(),
        maxSteps: 4,
        attempt: 1,
        personaVersion: 'v1',
        tokenBudget: 4000,
      },
    });
    const stream = h.keys.stream(partition());
    const before = await h.redis.xrevrange(stream, '+', '-', 'COUNT', 1);
    await store.commit(stateOf(id), 0, [started], { acts: false, final: false });
    const written = (await h.redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]!;
    expect(written[0]).not.toBe(before[0]?.[0]);
    const fields = written[1];
    const field = (name: string) => fields[fields.indexOf(name) + 1];
    expect(field('k')).toBe(EventKind.EpisodeStarted);
    expect(JSON.parse(field('e')!)).toMatchObject({ id: started.id, payload: { episodeId: id } });
    expect(fields).toContain(SEAL_FIELD);
    expect(sealHolds(field('e')!, field(SEAL_FIELD))).toBe(true);
    expect(sealHolds(field('e')!.replace(id, `${id}x`), field(SEAL_FIELD))).toBe(false);
  });

  it('wakes outbound from the commit that appends a send, before its reply is back; other commits wake no one', async () => {
    const subscriber = h.redis.duplicate();
    const wakes: string[] = [];
    subscriber.on('message', (channel: string, message: string) => wakes.push(`${channel}|${message}`));
    await subscriber.subscribe(h.keys.streamWakeChannel(ConsumerGroup.Outbound));
    try {
      const id = nextId();
      await store.commit(stateOf(id), 0, [], { acts: false, final: false });
      const send = makeEvent({
        kind: EventKind.ActionSend,
        groupId: GROUP,
        source: 'cognition',
        payload: {
          actionId: `act_${id}_0`,
          episodeId: id,
          triggerEventId: 'trigger-1',
          targetType: 'group',
          targetId: GROUP,
          text: '好的',
        },
      });
      // The script publishes the wake itself: the store sends no PUBLISH of its own after the reply.
      const redis = h.app.get<Redis>(REDIS);
      const publish = redis.publish.bind(redis);
      let published = 0;
      redis.publish = (...args: Parameters<Redis['publish']>) => {
        published++;
        return publish(...args);
      };
      try {
        await store.commit(stateOf(id), 1, [send], { acts: true, final: true });
      } finally {
        redis.publish = publish;
      }
      await subscriber.ping();
      expect(wakes).toEqual([`${h.keys.streamWakeChannel(ConsumerGroup.Outbound)}|${partition()}`]);
      expect(published).toBe(0);
    } finally {
      subscriber.disconnect();
    }
  });
});
