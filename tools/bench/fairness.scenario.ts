import { setTimeout as sleep } from 'node:timers/promises';
import { EventKind, Keyspace, type EventEnvelope } from '@app/contracts';
import { TEST_REDIS_URL } from '@app/testing';
import { percentile, round } from './load.js';
import { CognitionDouble, directMessage, eventLog, jain } from './scheduler-bench.js';
import { BenchStack } from './stack.js';

export interface FairnessOptions {
  /** Quiet groups, each sending @s at `quietPerSec`. */
  quietGroups: number;
  quietPerSec: number;
  /** The flooding group sends at this multiple of a quiet group's rate. */
  floodFactor: number;
  /** Equally busy groups for the share measurement. */
  busyGroups: number;
  seconds: number;
  llmMs: number;
}

/**
 * The fair dispatcher under a flood (ADR 0007). One scheduler process, a cognition double working jobs for `llmMs`.
 * 1. unloaded: quiet groups send @s; their @-to-dispatch latency (message appended → its episode job queued);
 * 2. loaded: the same while one group floods at `floodFactor`× their rate; `quietP99Ratio` = loaded / unloaded p99;
 * 3. shares: `busyGroups` groups each offer far more than the capacity; Jain's index of episodes granted per group.
 */
export async function fairness(options: FairnessOptions): Promise<Record<string, unknown>> {
  const partitions = 16;
  const stack = new BenchStack(['scheduler'], {
    QUNLI_PARTITIONS: String(partitions),
    QUNLI_DEBOUNCE_DIRECT_MS: '0',
    QUNLI_DISPATCH_MAX_RUNNING: '16',
    QUNLI_DISPATCH_MAX_AMBIENT: '12',
    QUNLI_DISPATCH_GROUP_MAX_RUNNING: '2',
    QUNLI_DISPATCH_GROUP_STARTS_PER_MINUTE: '100000',
  });
  await stack.start();
  const keys = new Keyspace(stack.prefix, partitions);
  const log = eventLog(stack.redis, stack.prefix, partitions);
  const dispatchMs = new Map<string, number[]>();
  const granted = new Map<string, number>();
  const cognition = new CognitionDouble(TEST_REDIS_URL, keys, log, options.llmMs, 64, (job) => {
    const group = job.data.groupId ?? '';
    const list = dispatchMs.get(group) ?? [];
    list.push(job.timestamp - Date.parse(job.data.trigger.createdAt));
    dispatchMs.set(group, list);
    granted.set(group, (granted.get(group) ?? 0) + 1);
  });
  const quiet = Array.from({ length: options.quietGroups }, (_, i) => String(810_000 + i));
  const flood = '819999';

  /** Send @s at these rates per group for `seconds`. */
  async function load(rates: Map<string, number>, seconds: number): Promise<void> {
    const started = performance.now();
    const sent = new Map<string, number>();
    while (performance.now() - started < seconds * 1000) {
      const elapsed = (performance.now() - started) / 1000;
      const batch = [];
      for (const [group, rate] of rates) {
        const due = Math.floor(elapsed * rate);
        for (let n = sent.get(group) ?? 0; n < due; n++) batch.push(directMessage(group));
        sent.set(group, due);
      }
      if (batch.length > 0) await log.appendAll(batch);
      await sleep(5);
    }
  }

  const quietP99 = (): number => {
    const all = quiet.flatMap((g) => dispatchMs.get(g) ?? []).sort((a, b) => a - b);
    return percentile(all, 99);
  };

  try {
    await sleep(1000);
    await load(new Map(quiet.map((g) => [g, options.quietPerSec])), options.seconds);
    await sleep(1500);
    const unloaded = quietP99();
    const unloadedP50 = percentile(
      quiet.flatMap((g) => dispatchMs.get(g) ?? []).sort((a, b) => a - b),
      50,
    );

    dispatchMs.clear();
    const rates = new Map(quiet.map((g) => [g, options.quietPerSec]));
    rates.set(flood, options.quietPerSec * options.floodFactor);
    await load(rates, options.seconds);
    await sleep(1500);
    const loaded = quietP99();
    const floodGranted = granted.get(flood) ?? 0;

    granted.clear();
    const busy = Array.from({ length: options.busyGroups }, (_, i) => String(820_000 + i));
    // Far more than 16 slots × (1000 / llmMs) episodes per second can serve.
    await load(new Map(busy.map((g) => [g, 40])), options.seconds);
    const shares = busy.map((g) => granted.get(g) ?? 0);

    const stages = await quietStages(stack, keys, new Set(quiet));
    return {
      scenario: 'fairness',
      quietP99Ratio: round(loaded / Math.max(unloaded, 1), 2),
      jain: round(jain(shares), 3),
      unloadedP99Ms: round(unloaded),
      unloadedP50Ms: round(unloadedP50),
      loadedP99Ms: round(loaded),
      floodEpisodes: floodGranted,
      busyShares: shares,
      quietGroups: options.quietGroups,
      floodFactor: options.floodFactor,
      llmMs: options.llmMs,
      seconds: options.seconds,
      quietStagesP50Ms: stages,
    };
  } finally {
    await cognition.close();
    await stack.stop();
  }
}

/** Median time of the quiet groups' @s from append to their first decision, and from it to the start command. */
async function quietStages(stack: BenchStack, keys: Keyspace, groups: Set<string>): Promise<Record<string, number>> {
  const events: EventEnvelope[] = [];
  for (let p = 0; p < keys.partitions; p++) {
    for (const [, fields] of await stack.redis.xrange(keys.stream(p), '-', '+')) {
      const event = JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope;
      if (groups.has(event.groupId ?? '')) events.push(event);
    }
  }
  const pay = (e: EventEnvelope) => e.payload as Record<string, string>;
  // An @ is decided more than once (the decision that offers its episode, then the one its episode's end makes):
  // the first, in its partition's order, is the one the start command follows.
  const decided = new Map<string, number>();
  for (const e of events) {
    if (e.kind === EventKind.DecisionMade && !decided.has(pay(e).subjectEventId!))
      decided.set(pay(e).subjectEventId!, Date.parse(e.createdAt));
  }
  const started = new Map(
    events
      .filter((e) => e.kind === EventKind.EpisodeControl && pay(e).command === 'start')
      .map((e) => [pay(e).episodeId!, Date.parse(e.createdAt)]),
  );
  const toDecision: number[] = [];
  const toStart: number[] = [];
  for (const e of events.filter((x) => x.kind === EventKind.MessageDirect)) {
    const d = decided.get(e.id);
    const s = started.get(`ep_${e.id}`);
    if (d !== undefined) toDecision.push(d - Date.parse(e.createdAt));
    if (d !== undefined && s !== undefined) toStart.push(s - d);
  }
  const p50 = (list: number[]) =>
    round(
      percentile(
        [...list].sort((a, b) => a - b),
        50,
      ),
    );
  return { decision: p50(toDecision), start: p50(toStart) };
}
