import { setTimeout as sleep } from 'node:timers/promises';
import { FakeOneBot } from '@app/testing';
import { LlmDouble } from '@app/testing';
import { groupMessage, OneBotLoad, percentile, round } from './load.js';
import { BENCH_SECRET, BENCH_SELF_ID, BENCH_TOKEN, BenchStack } from './stack.js';

export interface LatencyOptions {
  directs: number;
  backgroundPerSec: number;
  groups: number;
}

/**
 * Time from posting an @-mention to the OneBot implementation receiving `send_group_msg`, with an LLM double that
 * answers instantly: the runtime's own overhead. Measured while ambient messages arrive at `backgroundPerSec`.
 */
export async function latency(options: LatencyOptions): Promise<Record<string, unknown>> {
  const llm = await LlmDouble.start({
    replyText: (body) => `答：${/问题#(\d+)/.exec(JSON.stringify(body.messages))?.[1] ?? '?'}`,
  });
  const onebot = new FakeOneBot({ accessToken: BENCH_TOKEN, secret: BENCH_SECRET, selfId: BENCH_SELF_ID });
  await onebot.start();
  const stack = new BenchStack(['ingress', 'scheduler', 'cognition', 'outbound'], {
    OPENAI_BASE_URL: llm.baseUrl,
    OPENAI_API_KEY: 'bench',
    ONEBOT_HTTP_API_URL: onebot.url,
    QUNLI_COGNITION_CONCURRENCY: '16',
  });
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  onebot.onSend((message) => {
    const started = sentAt.get(message.text);
    if (started !== undefined) latencies.push(performance.now() - started);
  });
  try {
    await stack.start();
    const background = new OneBotLoad(stack.url('ingress'), 32);
    const direct = new OneBotLoad(stack.url('ingress'), 4);
    let running = true;
    let backgroundSent = 0;
    const backgroundStarted = performance.now();
    const backgroundLoop = (async () => {
      const inFlight = new Set<Promise<void>>();
      while (running) {
        const due = Math.floor(((performance.now() - backgroundStarted) / 1000) * options.backgroundPerSec);
        while (backgroundSent < due && inFlight.size < 256) {
          const i = backgroundSent++;
          const task = background
            .post(groupMessage(300_000 + (i % options.groups), 20_000 + (i % 89), `闲聊${i}`))
            .then(() => undefined)
            .finally(() => inFlight.delete(task));
          inFlight.add(task);
        }
        await sleep(5);
      }
      await Promise.all(inFlight);
    })();

    await sleep(2000);
    for (let k = 0; k < options.directs; k++) {
      const group = 300_000 + ((k * 7919) % options.groups);
      sentAt.set(`答：${k}`, performance.now());
      await direct.post(groupMessage(group, 21_000 + k, `问题#${k}`, true));
      await sleep(200);
    }
    const deadline = Date.now() + 30_000;
    while (latencies.length < options.directs && Date.now() < deadline) await sleep(50);
    running = false;
    await backgroundLoop;
    const backgroundMsgPerSec = backgroundSent / ((performance.now() - backgroundStarted) / 1000);
    await background.close();
    await direct.close();
    const sorted = [...latencies].sort((a, b) => a - b);
    return {
      scenario: 'latency',
      p50Ms: round(percentile(sorted, 50)),
      p99Ms: round(percentile(sorted, 99)),
      backgroundMsgPerSec: round(backgroundMsgPerSec),
      directs: options.directs,
      answered: latencies.length,
      maxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
    };
  } finally {
    await stack.stop();
    await onebot.stop();
    await llm.close();
  }
}
