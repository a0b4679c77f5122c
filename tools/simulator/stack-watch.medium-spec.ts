import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { EventKind, Keyspace, makeEvent } from '@app/contracts';
import { entryFields } from '@app/event-bus';
import {
  createTestDatabase,
  deleteKeys,
  testRedis,
  TEST_REDIS_URL,
  uniquePrefix,
  type TestDatabase,
} from '@app/testing';
import type { ThinkingStatus } from './simulator.js';
import { loadTranscript, watchThinking } from './stack-watch.js';

describe('the simulator reads the stack: transcript from the log, thinking from the streams', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('simulator');
  }, 60_000);

  afterAll(async () => {
    await db.drop();
  });

  it('loads the transcript oldest first, the bot’s lines as its own, recalled ones marked', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query(`INSERT INTO messages (event_id, group_id, message_id, user_id, display_name, text, from_self, sent_at, recalled_at) VALUES
      ('e1', '30001', '1', '20001', 'Alice', '早', false, '2026-01-01T00:00:00Z', NULL),
      ('e2', '30001', '2', '10001', '小满', '早呀', true, '2026-01-01T00:00:03Z', NULL),
      ('e3', 'private:20002', '3', '20002', 'Bob', '撤回的', false, '2026-01-01T00:00:05Z', '2026-01-01T00:00:06Z')`);
    await client.end();
    const transcript = await loadTranscript(db.url, '10001');
    expect(transcript.map((e) => [e.kind, e.text, e.groupId, e.userId, e.recalled ?? false])).toEqual([
      ['user', '早', '30001', '20001', false],
      ['bot', '早呀', '30001', '10001', false],
      ['user', '撤回的', undefined, '20002', true],
    ]);
  });

  it('reports thinking between episode.started and episode.completed', async () => {
    const redis = testRedis();
    const keys = new Keyspace(uniquePrefix('simwatch'), 2);
    const seen: ThinkingStatus[] = [];
    const stop = watchThinking(TEST_REDIS_URL, keys, (s) => seen.push(s));
    try {
      await sleep(300);
      const episode = {
        episodeId: 'ep1',
        triggerEventId: 't1',
        model: 'm',
        deadline: new Date().toISOString(),
        maxSteps: 3,
        attempt: 1,
      };
      const started = makeEvent({ kind: EventKind.EpisodeStarted, groupId: '30001', source: 'test', payload: episode });
      await redis.xadd(keys.stream(keys.partitionOf('30001')), '*', ...entryFields(started));
      const done = makeEvent({
        kind: EventKind.EpisodeCompleted,
        groupId: '30001',
        source: 'test',
        payload: {
          episodeId: 'ep1',
          triggerEventId: 't1',
          outcome: 'replied',
          steps: 1,
          tokensIn: 1,
          tokensOut: 1,
          durationMs: 1,
        },
      });
      await redis.xadd(keys.stream(keys.partitionOf('30001')), '*', ...entryFields(done));
      for (let i = 0; i < 100 && seen.length < 2; i++) await sleep(50);
      expect(seen).toEqual([
        { conversation: 'g:30001', thinking: true },
        { conversation: 'g:30001', thinking: false },
      ]);
    } finally {
      await stop();
      await deleteKeys(redis, keys.prefix);
      await redis.quit();
    }
  });
});
