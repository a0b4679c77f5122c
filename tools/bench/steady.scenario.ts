import { setTimeout as sleep } from 'node:timers/promises';
import { FakeOneBot, LlmDouble } from '@app/testing';
import { AmbientPacer, commandCalls, OneBotLoad, round } from './load.js';
import { commandRates } from './command-rates.js';
import type { IngestTransport } from './ingest.scenario.js';
import {
  BENCH_SECRET,
  BENCH_SELF_ID,
  BENCH_TOKEN,
  BenchStack,
  cpuSpentMs,
  POSTGRES_COMMS,
  REDIS_COMMS,
  serverCpuMs,
} from './stack.js';
import { ReverseWsLoad } from './ws-load.js';

export interface SteadyOptions {
  /** Ambient messages per second, spread over `groups`. */
  rate: number;
  groups: number;
  /** Traffic before the measured window: the apps' JIT, caches and pools warm up. */
  warmupMs: number;
  measureMs: number;
  /** Write a V8 CPU profile of each app into this directory (`--cpu-prof DIR`). */
  cpuProfDir?: string;
  /**
   * How the messages reach ingress (`--transport`): signed HTTP posts over 32 keep-alive connections (`http`, the
   * default), or frames on one reverse WebSocket as NapCat sends them (`ws`).
   */
  transport?: IngestTransport;
}

/** Frames on one reverse WebSocket, posted one by one as the pacer asks (OneBot v11 answers no frame). */
async function wsPoster(ingressUrl: string): Promise<Pick<OneBotLoad, 'post' | 'close'>> {
  const socket = new ReverseWsLoad(ingressUrl, 1);
  await socket.open();
  let frames = 0;
  return {
    post: async (event) => {
      await socket.send(frames++, event);
      return 0;
    },
    close: () => socket.close(),
  };
}

/**
 * CPU and Redis commands per ambient message at a steady, moderate rate, after a warm-up: the cost a deployment
 * pays per message when nothing batches (each partition's readers wake for an entry or two), which the ingest
 * bench, always saturated, does not show. The whole deployment of the latency bench runs (ingress, scheduler,
 * cognition, outbound, with an LLM double and a OneBot double); only ambient messages are sent. CPU is each app's,
 * and Redis' and this run's Postgres backends' (`serverCpuUsPerMessage`; Redis' counts any other client of it on
 * the machine too).
 */
export async function steady(options: SteadyOptions): Promise<Record<string, unknown>> {
  const llm = await LlmDouble.start({ replyText: () => '好' });
  const onebot = new FakeOneBot({ accessToken: BENCH_TOKEN, secret: BENCH_SECRET, selfId: BENCH_SELF_ID });
  await onebot.start();
  const stack = new BenchStack(
    ['ingress', 'scheduler', 'cognition', 'outbound'],
    {
      OPENAI_BASE_URL: llm.baseUrl,
      OPENAI_API_KEY: 'bench',
      ONEBOT_HTTP_API_URL: onebot.url,
    },
    options.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : [],
  );
  try {
    await stack.start();
    const load =
      options.transport === 'ws' ? await wsPoster(stack.url('ingress')) : new OneBotLoad(stack.url('ingress'), 32);
    const pacer = new AmbientPacer(load, options.rate, options.groups);
    const started = performance.now();
    const end = options.warmupMs + options.measureMs;
    // The backends serving this run's database alone (a shared machine's other databases left out).
    const backends = ` ${new URL(stack.databaseUrl).pathname.slice(1)} `;
    const servers = () => ({
      postgresBackends: serverCpuMs(POSTGRES_COMMS, backends),
      redis: serverCpuMs(REDIS_COMMS),
    });
    let window:
      | {
          cpu: Record<string, number>;
          servers: ReturnType<typeof servers>;
          calls: Map<string, number>;
          sent: number;
          at: number;
        }
      | undefined;
    while (performance.now() - started < end) {
      const elapsed = performance.now() - started;
      if (!window && elapsed >= options.warmupMs) {
        window = {
          cpu: stack.cpuMs(),
          servers: servers(),
          calls: await commandCalls(stack.redis),
          sent: pacer.sent,
          at: performance.now(),
        };
      }
      pacer.step();
      await sleep(5);
    }
    const cpu = stack.cpuMs();
    const serversAfter = servers();
    const calls = await commandCalls(stack.redis);
    const seconds = (performance.now() - window!.at) / 1000;
    const messages = pacer.sent - window!.sent;
    const perMessage = commandRates(window!.calls, calls, messages);
    await pacer.drain();
    await load.close();
    const apps = Object.keys(cpu);
    const cpuUsPerMessage = Object.fromEntries(
      apps.map((app) => [app, round(((cpu[app]! - (window!.cpu[app] ?? 0)) * 1000) / messages)]),
    );
    return {
      scenario: 'steady',
      rate: options.rate,
      transport: options.transport ?? 'http',
      msgPerSec: round(messages / seconds),
      cpuUsPerMessage,
      cpuUsPerMessageTotal: round(Object.values(cpuUsPerMessage).reduce((a, b) => a + b, 0)),
      cpuPercent: Object.fromEntries(
        apps.map((app) => [app, round(((cpu[app]! - (window!.cpu[app] ?? 0)) / (seconds * 1000)) * 100)]),
      ),
      // Redis and this run's Postgres backends, which the apps' commands and queries keep busy.
      serverCpuUsPerMessage: Object.fromEntries(
        (['postgresBackends', 'redis'] as const).flatMap((server) => {
          const spent = cpuSpentMs(window!.servers[server], serversAfter[server]);
          return spent === undefined ? [] : [[server, round((spent * 1000) / messages)]];
        }),
      ),
      redisCallsPerMessage: round(perMessage.reduce((sum, [, n]) => sum + n, 0)),
      // The same by command, most first (a script's own commands count under their names, and the script once more as
      // `evalsha`): which round trips and script steps a message costs.
      redisCallsPerMessageByCommand: Object.fromEntries(
        perMessage.filter(([, n]) => n >= 0.005).map(([command, n]) => [command, round(n, 3)]),
      ),
      measuredMs: round(seconds * 1000),
    };
  } finally {
    await stack.stop();
    await onebot.stop();
    await llm.close();
  }
}
