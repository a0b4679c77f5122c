import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { Pool } from 'undici';
import { signBody } from '@app/onebot';
import { napcatGroupMessage } from '@app/testing';
import { BENCH_SECRET, BENCH_SELF_ID, BENCH_TOKEN } from './stack.js';

/** A NapCat-shaped group message as an implementation posts it. */
export function groupMessage(groupId: number, userId: number, text: string, atSelf = false): Record<string, unknown> {
  return napcatGroupMessage({
    selfId: BENCH_SELF_ID,
    groupId: String(groupId),
    userId: String(userId),
    nickname: `user${userId}`,
    text,
    atSelf,
  });
}

/** Posts signed OneBot events to ingress over keep-alive connections. */
export class OneBotLoad {
  private readonly pool: Pool;

  constructor(ingressUrl: string, connections: number) {
    this.pool = new Pool(ingressUrl, { connections, pipelining: 1 });
  }

  async post(event: Record<string, unknown>): Promise<number> {
    const body = JSON.stringify(event);
    const response = await this.pool.request({
      path: '/onebot/v11/http',
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${BENCH_TOKEN}`,
        'x-signature': signBody(BENCH_SECRET, body),
      },
      body,
    });
    await response.body.dump();
    return response.statusCode;
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

/**
 * Ambient chatter at a steady rate: `step()` posts the messages due by now (at most 256 in flight), spread over
 * `groups` groups and 89 senders; `sent` counts what was posted; `drain()` waits for the posts in flight.
 */
export class AmbientPacer {
  sent = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly started = performance.now();

  constructor(
    private readonly load: Pick<OneBotLoad, 'post'>,
    private readonly perSecond: number,
    private readonly groups: number,
  ) {}

  step(): void {
    const due = Math.floor(((performance.now() - this.started) / 1000) * this.perSecond);
    while (this.sent < due && this.inFlight.size < 256) {
      const i = this.sent++;
      const task = this.load
        .post(groupMessage(300_000 + (i % this.groups), 20_000 + (i % 89), `闲聊${i}`))
        .then(() => undefined)
        .finally(() => this.inFlight.delete(task));
      this.inFlight.add(task);
    }
  }

  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  /** Steps every 5 ms until the returned `stop()`, which then waits for the posts in flight. */
  run(): { stop(): Promise<void> } {
    let running = true;
    const loop = (async () => {
      while (running) {
        this.step();
        await sleep(5);
      }
      await this.drain();
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
      },
    };
  }
}

/** Nearest-rank percentile of an ascending list. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Redis commands executed so far, by command (all clients: run it on a Redis nothing else uses meanwhile). */
export async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1]!, Number(match[2]));
  return calls;
}
