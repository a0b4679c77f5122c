import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { Clock, Metrics, QunliConfig, REDIS } from '@app/platform';
import { BUDGET_WINDOW_MS, budgetWindow, nextWindowStart } from './budget.rules.js';

/** What a memory model call is for, a label on the budget metrics. */
export type MemoryWork = 'summary' | 'jargon' | 'life_detail';

// Takes one call from the window when it fits: {1} granted, {0} denied. KEYS[1] the window's hash.
const RESERVE = `
local calls = tonumber(redis.call('HGET', KEYS[1], 'calls') or '0')
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or '0')
if calls >= tonumber(ARGV[1]) or tokens >= tonumber(ARGV[2]) then return 0 end
redis.call('HINCRBY', KEYS[1], 'calls', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

export type Reservation =
  | { granted: true; settle(tokensIn: number, tokensOut: number): Promise<void> }
  | {
      granted: false;
      /** Product time the next window opens. */
      retryAt: Date;
    };

/**
 * Memory's utils-model budget: calls and tokens per group per product hour (`QUNLI_MEMORY_CALLS_PER_HOUR`,
 * `QUNLI_MEMORY_TOKENS_PER_HOUR`), counted in Redis so every worker shares it, and in metrics.
 */
@Injectable()
export class MemoryBudget {
  private readonly calls;
  private readonly tokens;
  private readonly denied;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
    metrics: Metrics,
  ) {
    this.redis.defineCommand('qunliMemoryReserve', { numberOfKeys: 1, lua: RESERVE });
    this.calls = metrics.counter({
      name: 'qunli_memory_llm_calls_total',
      help: 'Utils-model calls made for memory and the life line, by work and outcome',
      labelNames: ['work', 'outcome'],
    });
    this.tokens = metrics.counter({
      name: 'qunli_memory_llm_tokens_total',
      help: 'Utils-model tokens spent on memory and the life line, by work and direction (in: prompt, out: completion)',
      labelNames: ['work', 'direction'],
    });
    this.denied = metrics.counter({
      name: 'qunli_memory_budget_denied_total',
      help: 'Memory model calls put off to the next hour because the group had spent its budget',
      labelNames: ['work'],
    });
  }

  private key(groupId: string | null, nowMs: number): string {
    const group = groupId ?? '_life';
    return this.keys.memoryBudget(this.keys.partitionOf(groupId), group, budgetWindow(nowMs));
  }

  async reserve(groupId: string | null, work: MemoryWork): Promise<Reservation> {
    const nowMs = this.clock.nowMs();
    const key = this.key(groupId, nowMs);
    const ttl = Math.ceil(this.clock.real(2 * BUDGET_WINDOW_MS));
    const granted = await (
      this.redis as unknown as { qunliMemoryReserve(...args: (string | number)[]): Promise<number> }
    ).qunliMemoryReserve(key, this.config.QUNLI_MEMORY_CALLS_PER_HOUR, this.config.QUNLI_MEMORY_TOKENS_PER_HOUR, ttl);
    if (granted !== 1) {
      this.denied.inc({ work });
      return { granted: false, retryAt: new Date(nextWindowStart(nowMs)) };
    }
    return {
      granted: true,
      settle: async (tokensIn, tokensOut) => {
        await this.redis.hincrby(key, 'tokens', tokensIn + tokensOut);
        this.tokens.inc({ work, direction: 'in' }, tokensIn);
        this.tokens.inc({ work, direction: 'out' }, tokensOut);
      },
    };
  }

  /**
   * Count a finished call's outcome: ok; partial: usable, but part of what was asked is missing or unusable;
   * invalid: an unusable answer; failed: the model call threw.
   */
  counted(work: MemoryWork, outcome: 'ok' | 'partial' | 'invalid' | 'failed'): void {
    this.calls.inc({ work, outcome });
  }

  /** Calls and tokens spent by a group in the current window (panel, tests). */
  async spent(groupId: string | null): Promise<{ calls: number; tokens: number }> {
    const values = await this.redis.hmget(this.key(groupId, this.clock.nowMs()), 'calls', 'tokens');
    return { calls: Number(values[0] ?? 0), tokens: Number(values[1] ?? 0) };
  }
}
