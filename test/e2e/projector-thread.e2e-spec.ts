/**
 * `QUNLI_PROJECTOR=thread` (ADR-0025): the scheduler runs the projector and the keyword lexicon's learning in a
 * worker thread of its own. The deployment must look the same from outside: the log reaches Postgres, the
 * scheduler's `/metrics` carries the thread's metrics, a SIGKILL of the process loses nothing, and a SIGTERM stops
 * the thread and the process cleanly.
 */
import { QunliStack } from '../support/stack.js';

describe('the scheduler with its log thread', () => {
  const stack = new QunliStack({ env: { QUNLI_PROJECTOR: 'thread' }, llm: { replyText: () => '在的' } });

  /** The group's one message is in the archive. */
  const archived = async (group: string) => {
    const { rows } = await stack.sql.query<{ n: string }>(
      `SELECT count(*) AS n FROM event_log WHERE kind IN ('message.direct', 'message.observed') AND group_id = $1`,
      [group],
    );
    return Number(rows[0]?.n ?? 0) === 1 ? true : undefined;
  };
  const sendsTo = (group: string) =>
    stack.onebot.sentMessages.filter((m) => m.action === 'send_group_msg' && m.groupId === group);

  beforeAll(() => stack.start(), 180_000);
  afterAll(() => stack.stop(), 60_000);

  it('answers, projects the log and reports the thread on /metrics', async () => {
    expect((await stack.post('820001', '有人吗', true)).status).toBe(204);
    await stack.until('the reply', async () => (sendsTo('820001').length === 1 ? true : undefined));
    await stack.until('the message in event_log', () => archived('820001'));
    const decided = await stack.until('the decision projected', async () => {
      const { rows } = await stack.sql.query<{ n: string }>(
        `SELECT count(*) AS n FROM event_log WHERE kind = 'decision.made' AND group_id = '820001'`,
      );
      return Number(rows[0]?.n ?? 0) > 0 ? true : undefined;
    });
    expect(decided).toBe(true);
    const metrics = await fetch(`${stack.app('scheduler').url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/qunli_projection_events_total\{[^}]*app="scheduler"/);
    expect(metrics).toMatch(/qunli_stream_entries_total\{[^}]*group="projector"/);
    expect(metrics).toMatch(/qunli_stream_entries_total\{[^}]*group="scheduler"/);
    // One process, one set of default metrics: the thread adds none of its own.
    expect(metrics.match(/^# TYPE process_cpu_seconds_total /gm)).toHaveLength(1);
  }, 120_000);

  it("seeds the persona's interests, which the log thread does beside keyword learning", async () => {
    // The seeder cuts text with jieba as keyword learning does, so it runs in the thread that loaded the dictionary
    // (the main thread no longer loads a copy of its own); the log must carry its terms all the same.
    const seeded = await stack.until('the seeded terms in event_log', async () => {
      const { rows } = await stack.sql.query<{ n: string }>(
        `SELECT count(*) AS n FROM event_log
          WHERE kind = 'keyword.term.changed' AND envelope->'payload'->>'change' = 'seeded'`,
      );
      return Number(rows[0]?.n ?? 0) > 0 ? Number(rows[0]!.n) : undefined;
    });
    expect(seeded).toBeGreaterThan(0);
  }, 60_000);

  it('loses nothing when the process is killed, and stops the thread with the process on SIGTERM', async () => {
    const scheduler = stack.app('scheduler');
    await scheduler.kill('SIGKILL');
    expect((await stack.post('820002', '还在吗', true)).status).toBe(204);
    await scheduler.start(60_000);
    await stack.until('the message posted while the scheduler was down, in event_log', () => archived('820002'));
    await stack.until('its reply', async () => (sendsTo('820002').length === 1 ? true : undefined));

    await scheduler.stop(30_000);
    expect(scheduler.lastExit).toEqual({ code: 0, signal: null });
  }, 180_000);
});
