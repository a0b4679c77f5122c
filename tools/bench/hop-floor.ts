import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRedis } from '@app/platform';
import { deleteKeys, freePort, REPO_ROOT, uniquePrefix, type FakeOneBot } from '@app/testing';
import { busyShare, readMachineTicks } from './cpu-budget.js';
import { epochMs, floorKeys, ROLES, type HopMarks } from './hop-floor-process.js';
import { AmbientPacer, groupMessage, OneBotLoad, percentile, round } from './load.js';

export interface HopFloorOptions {
  redisUrl: string;
  /** An OpenAI-compatible endpoint that answers a prompt holding `问题#k` with `答：k`, as the latency bench's double. */
  llmBaseUrl: string;
  /** Receives the floor's sends; its `onSend` tells when each answer arrived. */
  onebot: Pick<FakeOneBot, 'url' | 'onSend'>;
  onebotToken?: string;
  selfId: string;
  backgroundPerSec: number;
  groups: number;
  directs: number;
  warmupDirects: number;
  warmupMs: number;
  spacingMs: number;
}

/** The hops of an @'s way, in order (`hop-floor-process.ts` names the processes). */
export const FLOOR_STAGES = ['edge', 'stream', 'queue', 'llm', 'handOver', 'send'] as const;
export type FloorStage = (typeof FLOOR_STAGES)[number];

export interface HopFloorResult {
  p50Ms: number;
  p99Ms: number;
  directs: number;
  answered: number;
  backgroundMsgPerSec: number;
  /** The busy share of the machine's CPU time while the measured @s were asked and answered (as `latency`'s). */
  machineBusyShare: number | null;
  /**
   * Per @, ms: post → the edge has it; → the decider read it; → a thinker took its job; → both LLM answers; → a
   * sender took the send job; → OneBot received `send_group_msg`.
   */
  stagesP50Ms: Record<FloorStage, number>;
}

/** The floor's @s ask 问题#k from this number on, apart from the ones a latency run asks afterwards. */
const FIRST_ASK = 1_000_000;

/**
 * The hop floor: an @'s way through qunli's processes with only the hops left (`hop-floor-process.ts`): an HTTP
 * post, a stream append and a consumer group's read, a BullMQ job to a worker that makes two calls to the LLM
 * endpoint, a BullMQ job to a sender, and the HTTP call to OneBot, each hop in a process of its own as in a
 * deployment. Measured like `latency`, with the same ambient background through the same edge, it is what this
 * machine's wake-ups and round trips cost an @ before any of qunli's work: the floor under the latency goal.
 */
export async function hopFloor(options: HopFloorOptions): Promise<HopFloorResult> {
  const prefix = uniquePrefix('floor');
  const keys = floorKeys(prefix);
  const redis = createRedis(options.redisUrl, 'qunli-bench-floor', { enableAutoPipelining: false });
  const port = await freePort();
  const children: ChildProcess[] = [];
  const received = new Map<string, number>();
  const unsubscribe = options.onebot.onSend((message) => received.set(message.text, epochMs()));
  try {
    for (const role of ROLES) {
      children.push(
        await startRole(role, {
          FLOOR_REDIS_URL: options.redisUrl,
          FLOOR_PREFIX: prefix,
          FLOOR_PORT: String(port),
          FLOOR_SELF_ID: options.selfId,
          FLOOR_LLM_URL: options.llmBaseUrl,
          FLOOR_ONEBOT_URL: options.onebot.url,
          ...(options.onebotToken !== undefined && { FLOOR_ONEBOT_TOKEN: options.onebotToken }),
        }),
      );
    }
    const edgeUrl = `http://127.0.0.1:${port}`;
    const background = new OneBotLoad(edgeUrl, 32);
    const direct = new OneBotLoad(edgeUrl, 4);
    const pacer = new AmbientPacer(background, options.backgroundPerSec, options.groups);
    const started = performance.now();
    const backgroundRun = pacer.run();
    const posted = new Map<string, number>();
    const ask = async (k: number): Promise<string> => {
      const answer = `答：${FIRST_ASK + k}`;
      posted.set(answer, epochMs());
      const group = 300_000 + ((k * 7919) % options.groups);
      await direct.post(groupMessage(group, 21_000 + k, `问题#${FIRST_ASK + k}`, true));
      await sleep(options.spacingMs);
      return answer;
    };
    const waitFor = async (answers: string[]) => {
      const deadline = Date.now() + 30_000;
      while (answers.some((a) => !received.has(a)) && Date.now() < deadline) await sleep(50);
    };
    const warmup: string[] = [];
    for (let w = 0; w < options.warmupDirects; w++) warmup.push(await ask(options.directs + w));
    const left = options.warmupMs - (performance.now() - started);
    if (left > 0) await sleep(left);
    await waitFor(warmup);
    const measured: string[] = [];
    const machineBefore = readMachineTicks();
    for (let k = 0; k < options.directs; k++) measured.push(await ask(k));
    await waitFor(measured);
    const machineAfter = readMachineTicks();
    await backgroundRun.stop();
    const backgroundMsgPerSec = pacer.sent / ((performance.now() - started) / 1000);
    await background.close();
    await direct.close();

    const stored = await redis.hgetall(keys.marks);
    const latencies: number[] = [];
    const stages = Object.fromEntries(FLOOR_STAGES.map((s) => [s, [] as number[]])) as Record<FloorStage, number[]>;
    for (const answer of measured) {
      const at = received.get(answer);
      if (at === undefined) continue;
      latencies.push(at - posted.get(answer)!);
      const marks = stored[answer] === undefined ? undefined : (JSON.parse(stored[answer]) as HopMarks);
      const times = [
        posted.get(answer),
        marks?.edge,
        marks?.read,
        marks?.picked,
        marks?.answered,
        marks?.sendPicked,
        at,
      ];
      if (times.some((t) => t === undefined)) continue;
      FLOOR_STAGES.forEach((stage, i) => stages[stage].push(times[i + 1]! - times[i]!));
    }
    const p = (values: number[], q: number) =>
      round(
        percentile(
          [...values].sort((a, b) => a - b),
          q,
        ),
      );
    return {
      p50Ms: p(latencies, 50),
      p99Ms: p(latencies, 99),
      directs: options.directs,
      answered: latencies.length,
      backgroundMsgPerSec: round(backgroundMsgPerSec),
      machineBusyShare: busyShare(machineBefore, machineAfter) ?? null,
      stagesP50Ms: Object.fromEntries(FLOOR_STAGES.map((s) => [s, p(stages[s], 50)])) as Record<FloorStage, number>,
    };
  } finally {
    unsubscribe();
    await Promise.all(children.map(stopRole));
    await deleteKeys(redis, prefix);
    await redis.quit();
  }
}

const PROCESS_ENTRY = join(REPO_ROOT, 'dist/tools/bench/hop-floor-process.js');

async function startRole(role: string, env: Record<string, string>): Promise<ChildProcess> {
  if (!existsSync(PROCESS_ENTRY)) throw new Error(`not built: ${PROCESS_ENTRY} — run \`npm run build\` first`);
  const child = fork(PROCESS_ENTRY, [role], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`hop floor: ${role} did not start within 30 s`));
    }, 30_000);
    child.once('message', () => {
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`hop floor: ${role} exited with code ${String(code)} before it was ready`));
    });
  });
  return child;
}

async function stopRole(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}
