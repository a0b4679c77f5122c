import { DataSource } from 'typeorm';
import type { BatchEntry } from '@app/event-bus';
import { dataSourceOptions, ProjectionRepository, ProjectorService } from '@app/persistence';
import { Metrics } from '@app/platform';
import {
  call,
  CognitionHarness,
  forReplyer,
  PLANNER_MODEL,
  REPLYER_MODEL,
  testTool,
} from '../../../../test/cognition/cognition.harness.js';

/** "LLM calls and tokens per handled message" is one SQL query over the projected `llm_calls`. */
export const CALLS_PER_HANDLED_MESSAGE = `
  SELECT count(*)::int AS calls,
         sum(c.tokens_in + c.tokens_out)::int AS tokens,
         count(DISTINCT e.trigger_event_id)::int AS messages,
         count(*)::float / count(DISTINCT e.trigger_event_id) AS calls_per_message,
         sum(c.tokens_in + c.tokens_out)::float / count(DISTINCT e.trigger_event_id) AS tokens_per_message
    FROM llm_calls c JOIN episodes e ON e.id = c.episode_id`;

let h: CognitionHarness;
let db: DataSource;

beforeAll(async () => {
  h = await CognitionHarness.start({}, 'accounting');
  db = await new DataSource(dataSourceOptions(h.database.url)).initialize();
}, 60_000);

afterAll(async () => {
  await db?.destroy();
  await h?.close();
});

describe('LLM accounting in Postgres', () => {
  it('projects every call with role, model and tokens, and answers "per handled message" in one query', async () => {
    const off = h.register(testTool({ name: 'look_up', description: '查一下' }));
    const first = await h.message('小满 在吗', { direct: true });
    const second = await h.message('小满 帮我查查', { direct: true });
    await h.run(h.startJob(first));
    h.double.push(
      call('look_up', {}),
      call('reply', { msg_id: second.payload.messageId }),
      forReplyer({ kind: 'content', content: '查到了' }),
    );
    await h.run(h.startJob(second));
    off();

    const projector = new ProjectorService(new ProjectionRepository(db), new Metrics('test', false));
    // The group's partition, and the bot's own (where `persona.published` lives), as the projector reads them.
    for (const partition of new Set([h.keys.partitionOf('30001'), h.keys.partitionOf(null)])) {
      const stream = await h.redis.xrange(h.keys.stream(partition), '-', '+');
      const entries: BatchEntry[] = stream.map(([entryId, fields]) => ({
        partition,
        entryId,
        event: JSON.parse(fields[fields.indexOf('e') + 1]!) as BatchEntry['event'],
        deliveries: 1,
      }));
      await projector.handleBatch(entries);
    }

    const byRole = await db.query<{ role: string; model: string; calls: number; tokens_in: number }[]>(
      `SELECT role, model, count(*)::int AS calls, sum(tokens_in)::int AS tokens_in FROM llm_calls GROUP BY role, model ORDER BY role`,
    );
    expect(byRole.map((r) => [r.role, r.model, r.calls])).toEqual([
      ['planner', PLANNER_MODEL, 3],
      ['replyer', REPLYER_MODEL, 2],
    ]);
    expect(byRole.every((r) => r.tokens_in > 0)).toBe(true);
    const [usage] =
      await db.query<{ calls: number; messages: number; calls_per_message: number; tokens: number }[]>(
        CALLS_PER_HANDLED_MESSAGE,
      );
    expect(usage).toMatchObject({ calls: 5, messages: 2, calls_per_message: 2.5 });
    const [episodes] = await db.query<{ tokens: number }[]>(
      `SELECT sum(tokens_in + tokens_out)::int AS tokens FROM episodes`,
    );
    expect(usage!.tokens).toBe(episodes!.tokens);
    const personas = await db.query<{ version: string; name: string }[]>(`SELECT version, name FROM personas`);
    expect(personas).toEqual([{ version: expect.stringMatching(/^[0-9a-f]{16}$/), name: '林小满' }]);
    const [episode] = await db.query<
      { ended_by: string; persona_version: string; planner_model: string; llm_calls: number }[]
    >(`SELECT ended_by, persona_version, planner_model, llm_calls FROM episodes WHERE trigger_event_id = $1`, [
      second.id,
    ]);
    expect(episode).toEqual({
      ended_by: 'action',
      persona_version: personas[0]!.version,
      planner_model: PLANNER_MODEL,
      llm_calls: 3,
    });
  });
});
