import { Injectable } from '@nestjs/common';
import { Clock, LONG_SECONDS_BUCKETS, Metrics, SHORT_SECONDS_BUCKETS } from '@app/platform';
import { CooldownSpells } from './cooldown-spells.js';

export const WAIT_REASONS = ['cooldown', 'group_budget', 'global_rate', 'typing', 'order'] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

/** Every outbound metric, in one place so the names match the dashboards. */
@Injectable()
export class SendMetrics {
  /** Parts by outcome: sent, failed, unknown, dropped, verified_found, verified_absent. */
  readonly sends;
  readonly retries;
  readonly rejected;
  readonly latency;
  readonly waits;
  readonly waiting;
  readonly cooldowns;
  readonly verifications;
  readonly queued;
  /** Conversations in a send cooldown right now (this process's), read by the two cooldown gauges. */
  readonly cooldownSpells = new CooldownSpells();

  constructor(metrics: Metrics, clock: Clock) {
    const spells = this.cooldownSpells;
    this.sends = metrics.counter({
      name: 'qunli_sends_total',
      help: 'Message parts by outcome: sent, failed, unknown (verification impossible), dropped (trigger recalled)',
      labelNames: ['outcome'],
    });
    this.retries = metrics.counter({
      name: 'qunli_send_retries_total',
      help: 'API calls repeated for a part (after a refusal, an unreachable implementation or a verified absence)',
    });
    this.rejected = metrics.counter({
      name: 'qunli_send_rejected_total',
      help: 'send actions refused before any API call, by reason',
      labelNames: ['reason'],
    });
    this.latency = metrics.histogram({
      name: 'qunli_send_duration_seconds',
      help: 'Time to settle one part (waits, attempts, verification and backoff included), by outcome',
      labelNames: ['outcome'],
      buckets: LONG_SECONDS_BUCKETS,
    });
    this.waits = metrics.histogram({
      name: 'qunli_send_wait_seconds',
      help: 'Time a send waited before its API call (real seconds), by reason: cooldown, group_budget, global_rate, typing, order',
      labelNames: ['reason'],
      buckets: LONG_SECONDS_BUCKETS,
    });
    this.waiting = metrics.gauge({
      name: 'qunli_send_waiting',
      help: 'Sends waiting right now, by reason',
      labelNames: ['reason'],
    });
    // Every reason is exported from the start (at 0), so a dashboard and the long-cooldown alert see a series
    // before the first send ever waits.
    for (const reason of WAIT_REASONS) this.waiting.set({ reason }, 0);
    this.cooldowns = metrics.counter({
      name: 'qunli_send_cooldowns_total',
      help: 'Conversations put into a send cooldown after an unknown outcome (NapCat 1200: risk control)',
    });
    metrics.gauge({
      name: 'qunli_send_cooldown_conversations',
      help: 'Conversations (groups and private chats) whose sends are paused by a cooldown right now, in this process',
      collect() {
        this.set(spells.current(clock.nowMs()).conversations);
      },
    });
    metrics.gauge({
      name: 'qunli_send_cooldown_longest_seconds',
      help: 'The longest unbroken cooldown spell running now (product seconds): repeated risk-control refusals extend it',
      collect() {
        this.set(spells.current(clock.nowMs()).longestMs / 1000);
      },
    });
    this.verifications = metrics.counter({
      name: 'qunli_send_verifications_total',
      help: 'Unknown send outcomes checked against the implementation history, by result: found, absent, impossible',
      labelNames: ['result'],
    });
    this.queued = metrics.histogram({
      name: 'qunli_send_queue_seconds',
      help: 'Time from action.send to its first API call',
      buckets: SHORT_SECONDS_BUCKETS,
    });
  }
}
