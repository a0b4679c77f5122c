import { setTimeout as sleep } from 'node:timers/promises';
import { offeredTools, type ChatCompletionBody } from '@app/testing';
import { QunliStack } from '../support/stack.js';

/*
 * The runtime spine and cognition together: an episode that decides to `wait` parks itself, the scheduler sets a
 * durable timer and frees its slot, the timer fires as `timer.fired` in the group's partition, the scheduler sends
 * `resume` and queues the continuation, and a worker continues the episode with what was said meanwhile — all
 * through the real apps, product time running 10× faster.
 */

const GROUP = '820001';
const planner = (body: ChatCompletionBody) => offeredTools(body).includes('wait');
const prompt = (body: ChatCompletionBody | null) => JSON.stringify(body?.messages ?? []);

describe('an episode that waits, through the real scheduler and cognition', () => {
  const stack = new QunliStack({
    env: {
      QUNLI_TIME_SCALE: '10',
      QUNLI_TIME_EPOCH: new Date().toISOString(),
      QUNLI_DEBOUNCE_DIRECT_MS: '0',
    },
  });

  beforeAll(() => stack.start(), 180_000);
  afterAll(() => stack.stop(), 60_000);

  it('resumes after the durable timer with the message that came meanwhile, and answers once', async () => {
    // The planner waits 30 product seconds (3 real) first; after the resume it answers as a cooperative model.
    stack.llm.push({
      kind: 'tool',
      calls: [{ name: 'wait', arguments: JSON.stringify({ seconds: 30, reason: '等他们回复' }) }],
      content: '先等等，看看有没有人知道。',
      match: planner,
    });
    expect((await stack.post(GROUP, '谁知道明天几点开会？', true)).status).toBe(204);

    const episodeId = await stack.until('the episode to park itself', async () => {
      const { rows } = await stack.sql.query<{ id: string }>(
        `SELECT id FROM episodes WHERE group_id = $1 AND state = 'awaiting_observation'`,
        [GROUP],
      );
      return rows[0]?.id;
    });
    expect((await stack.post(GROUP, '明天下午三点，在三楼会议室')).status).toBe(204);

    const sends = () => stack.onebot.sentMessages.filter((m) => m.groupId === GROUP);
    await stack.until('the answer after the wait', async () => (sends().length > 0 ? true : undefined), 90_000);
    await sleep(2000);
    expect(sends()).toHaveLength(1);

    // The continuation saw what was said while the episode waited.
    const plannerCalls = stack.llm.completionRequests.filter((r) => r.body && planner(r.body));
    expect(plannerCalls.length).toBeGreaterThanOrEqual(2);
    expect(prompt(plannerCalls[0]!.body)).not.toContain('三楼会议室');
    expect(plannerCalls.slice(1).some((r) => prompt(r.body).includes('三楼会议室'))).toBe(true);

    // The log tells the story: one wait timer fired, one resume sent, the episode ended by its reply.
    const { rows: timers } = await stack.sql.query<{ purpose: string; state: string }>(
      `SELECT purpose, state FROM timers WHERE episode_id = $1 AND purpose = 'episode_wait'`,
      [episodeId],
    );
    expect(timers).toEqual([{ purpose: 'episode_wait', state: 'fired' }]);
    const { rows: controls } = await stack.sql.query<{ command: string; cause: string | null }>(
      `SELECT command, cause FROM episode_controls WHERE episode_id = $1 ORDER BY seq`,
      [episodeId],
    );
    expect(controls.map((c) => c.command)).toEqual(['start', 'resume']);
    expect(controls[1]!.cause).toBe('timer');
    const { rows: episode } = await stack.sql.query<{ state: string; outcome: string }>(
      `SELECT state, outcome FROM episodes WHERE id = $1`,
      [episodeId],
    );
    expect(episode[0]).toEqual({ state: 'final', outcome: 'replied' });
  }, 150_000);
});
