import { setTimeout as sleep } from 'node:timers/promises';
import { FakeOneBot, LlmDouble } from '@app/testing';
import { commandCalls, round } from './load.js';
import { commandRates } from './command-rates.js';
import { BENCH_SECRET, BENCH_SELF_ID, BENCH_TOKEN, BenchStack } from './stack.js';

export interface IdleOptions {
  /** After boot, before the measured window: pools connect, first polls and janitors run. */
  warmupMs: number;
  measureMs: number;
}

/**
 * What a deployment costs while nothing happens: CPU per app and Redis commands per second with no message at all
 * (the timer wheels, stream readers, janitors, lease heartbeats and dispatcher of an idle bot). A bot spends most
 * of its life idle in quiet groups, and this is also the floor every other bench stands on.
 */
export async function idle(options: IdleOptions): Promise<Record<string, unknown>> {
  const llm = await LlmDouble.start({ replyText: () => '好' });
  const onebot = new FakeOneBot({ accessToken: BENCH_TOKEN, secret: BENCH_SECRET, selfId: BENCH_SELF_ID });
  await onebot.start();
  const stack = new BenchStack(['ingress', 'scheduler', 'cognition', 'outbound'], {
    OPENAI_BASE_URL: llm.baseUrl,
    OPENAI_API_KEY: 'bench',
    ONEBOT_HTTP_API_URL: onebot.url,
  });
  try {
    await stack.start();
    await sleep(options.warmupMs);
    const cpuBefore = stack.cpuMs();
    const callsBefore = await commandCalls(stack.redis);
    const started = performance.now();
    await sleep(options.measureMs);
    const cpu = stack.cpuMs();
    const calls = await commandCalls(stack.redis);
    const seconds = (performance.now() - started) / 1000;
    const perSec = commandRates(callsBefore, calls, seconds);
    const cpuMsPerSec = Object.fromEntries(
      Object.entries(cpu).map(([app, ms]) => [app, round((ms - (cpuBefore[app] ?? 0)) / seconds)]),
    );
    return {
      scenario: 'idle',
      cpuMsPerSec,
      cpuMsPerSecTotal: round(Object.values(cpuMsPerSec).reduce((a, b) => a + b, 0)),
      redisCommandsPerSec: round(perSec.reduce((a, [, rate]) => a + rate, 0)),
      // The commands behind most of it (the bench's own few reads included).
      redisCommandsPerSecTop: Object.fromEntries(perSec.slice(0, 8).map(([command, rate]) => [command, round(rate)])),
      measuredMs: round(seconds * 1000),
    };
  } finally {
    await stack.stop();
    await onebot.stop();
    await llm.close();
  }
}
