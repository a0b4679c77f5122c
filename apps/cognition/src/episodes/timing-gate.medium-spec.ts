import { EventKind, type LlmCalledPayload, type MonitorRecordedPayload } from '@app/contracts';
import { offeredTools } from '@app/testing';
import { call, CognitionHarness, PLANNER_MODEL } from '../../../../test/cognition/cognition.harness.js';

let h: CognitionHarness;
const planner = () => h.double.completionRequests.filter((r) => r.body?.model === PLANNER_MODEL);

beforeAll(async () => {
  h = await CognitionHarness.start({ QUNLI_TIMING_GATE: 'ambient' }, 'gate');
}, 60_000);

afterAll(async () => {
  await h?.close();
});

beforeEach(() => {
  h.double.clearScript();
  h.double.requests.length = 0;
});

describe('timing gate (QUNLI_TIMING_GATE=ambient)', () => {
  it('asks an ambient episode’s gate first; no_action ends it after one cheap call', async () => {
    const trigger = await h.message('今天食堂的菜好难吃');
    h.double.push(call('no_action', { reason: '没在跟我说话' }));
    const job = h.startJob(trigger);
    expect(await h.run(job)).toMatchObject({ outcome: 'no_reply' });
    expect(planner()).toHaveLength(1);
    expect(offeredTools(planner()[0]!.body)).toEqual(['continue', 'wait', 'no_action']);
    expect(planner()[0]!.body!.max_tokens).toBe(384);
    const calls = await h.payloads<LlmCalledPayload>(job.episodeId, EventKind.LlmCalled);
    expect(calls.map((c) => c.purpose)).toEqual(['timing_gate']);
    const monitors = await h.payloads<MonitorRecordedPayload>(job.episodeId, EventKind.MonitorRecorded);
    expect(monitors.find((m) => m.name === 'timing_gate.result')?.data).toMatchObject({ action: 'no_action' });
  });

  it('goes on to the planner on continue, and never gates a direct message', async () => {
    const ambient = await h.message('有人知道图书馆几点关门吗');
    h.double.push(call('continue', {}), call('no_action', {}));
    await h.run(h.startJob(ambient));
    expect(planner().map((r) => offeredTools(r.body).includes('continue'))).toEqual([true, false]);
    h.double.requests.length = 0;
    const direct = await h.message('小满 你知道吗', { direct: true });
    h.double.push(call('no_action', {}));
    await h.run(h.startJob(direct));
    expect(planner()).toHaveLength(1);
    expect(offeredTools(planner()[0]!.body)).not.toContain('continue');
  });
});
