/**
 * SIGTERM is how an orchestrator stops a process (Kubernetes on a rollout or a scale-down, compose on `down`). Every
 * app must then stop taking work, finish or hand back what it holds, close its connections and exit 0 by itself —
 * and no work may be lost: what was accepted before the signal is answered, once, after the restart.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppUnderTest } from '@app/testing';
import { QunliStack } from '../support/stack.js';

const LLM_LATENCY_MS = 4000;
/** A bound for "promptly", far above what a stop takes; a process still running then is killed and fails the test. */
const STOP_BOUND_MS = 30_000;

describe('graceful shutdown: SIGTERM to each app', () => {
  const stack = new QunliStack({ llm: { latencyMs: LLM_LATENCY_MS, replyText: () => '收到～' } });

  const sendsTo = (group: string) =>
    stack.onebot.sentMessages.filter((m) => m.action === 'send_group_msg' && m.groupId === group);

  async function terminate(app: AppUnderTest): Promise<void> {
    await stack.app(app).stop(STOP_BOUND_MS);
    expect({ app, exit: stack.app(app).lastExit }).toEqual({ app, exit: { code: 0, signal: null } });
  }

  beforeAll(() => stack.start(), 180_000);
  afterAll(() => stack.stop(), 60_000);

  it('cognition finishes the episode in flight, takes no new one while stopping, and exits 0', async () => {
    const cognition = stack.app('cognition');
    expect((await stack.post('810001', '在吗？', true)).status).toBe(204);
    await stack.until('the episode to be waiting on the LLM', async () =>
      stack.llm.completionRequests.length === 1 ? true : undefined,
    );

    const stopping = terminate('cognition');
    const draining = await stack.until('cognition to report itself unready while it drains', async () => {
      const status = await fetch(`${cognition.url}/health`).then(
        (r) => r.status,
        () => undefined,
      );
      return status === 503 ? status : undefined;
    });
    expect(draining).toBe(503);
    // Accepted while cognition drains: it stays queued for the next worker.
    expect((await stack.post('810002', '还在吗？', true)).status).toBe(204);
    await stopping;

    // The episode in flight finished (planner, then replyer); nothing was asked about the message queued meanwhile.
    const askedAbout = (text: string) =>
      stack.llm.completionRequests.filter((r) => JSON.stringify(r.body).includes(text)).length;
    expect(askedAbout('在吗？')).toBeGreaterThanOrEqual(1);
    expect(askedAbout('还在吗？')).toBe(0);
    await stack.until('the finished episode to be sent', async () =>
      sendsTo('810001').length === 1 ? true : undefined,
    );

    await cognition.start(60_000);
    await stack.until('the queued episode to be answered by the new worker', async () =>
      sendsTo('810002').length === 1 ? true : undefined,
    );
    await sleep(2000);
    expect([sendsTo('810001').length, sendsTo('810002').length]).toEqual([1, 1]);
  }, 120_000);

  it.each<AppUnderTest>(['ingress', 'scheduler', 'outbound', 'life-director'])(
    '%s exits 0 on SIGTERM and starts again',
    async (app) => {
      await terminate(app);
      await stack.app(app).start(60_000);
    },
    90_000,
  );

  it('loses nothing accepted just before every app is stopped at once', async () => {
    expect((await stack.post('810003', '大家都停一下', true)).status).toBe(204);
    const apps: AppUnderTest[] = ['ingress', 'scheduler', 'cognition', 'outbound', 'life-director'];
    await Promise.all(apps.map((app) => terminate(app)));
    for (const app of apps) await stack.app(app).start(60_000);
    await stack.until('the message accepted before the stop to be answered', async () =>
      sendsTo('810003').length >= 1 ? true : undefined,
    );
    await sleep(2000);
    expect(sendsTo('810003')).toHaveLength(1);
  }, 180_000);
});
