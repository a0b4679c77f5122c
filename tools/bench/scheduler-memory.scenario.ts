import { setTimeout as sleep } from 'node:timers/promises';
import { EventKind, Keyspace, makeEvent, PRIORITY } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { round } from './load.js';
import { eventLog, rssMb } from './scheduler-bench.js';
import { BenchStack } from './stack.js';

export interface SchedulerMemoryOptions {
  groups: number;
  eventsPerGroup: number;
  /** Cap the scheduler's V8 old space (MB), to see the live set rather than garbage V8 had no reason to collect. */
  heapMb?: number;
  /** How long the scheduler rests after the intake before `rssMb` is read (s). */
  settleSeconds: number;
  /** The scheduler's `QUNLI_HEAP_COMPACT_QUIET_MS` (ADR 0035); 0 runs it without its heap steward. */
  heapCompactQuietMs?: number;
}

/**
 * The scheduler's resident memory with many live events (ADR 0006): `groups` groups each holding `eventsPerGroup`
 * undecided events — @s that may not be handled for an hour (`notBefore`), so each is tracked, held and has a
 * durable timer. Group state, held messages and timers live in Redis; the process keeps only what it is handling.
 */
export async function schedulerMemory(options: SchedulerMemoryOptions): Promise<Record<string, unknown>> {
  const partitions = 16;
  const stack = new BenchStack(
    ['scheduler'],
    {
      QUNLI_PARTITIONS: String(partitions),
      ...(options.heapCompactQuietMs !== undefined
        ? { QUNLI_HEAP_COMPACT_QUIET_MS: String(options.heapCompactQuietMs) }
        : {}),
    },
    options.heapMb ? [`--max-old-space-size=${options.heapMb}`] : [],
  );
  await stack.start();
  const scheduler = stack.apps.get('scheduler')!;
  const keys = new Keyspace(stack.prefix, partitions);
  const log = eventLog(stack.redis, stack.prefix, partitions);
  const total = options.groups * options.eventsPerGroup;
  const notBefore = new Date(Date.now() + 3600_000);
  let peak = 0;
  const sampler = setInterval(() => {
    // A scheduler that died (out of memory under `--heap-mb`) has no /proc entry: `waitHandled` reports it.
    if (alive(scheduler.pid!)) peak = Math.max(peak, rssMb(scheduler.pid!));
  }, 200);
  try {
    const startedRss = rssMb(scheduler.pid!);
    const started = performance.now();
    for (let round = 0; round < options.eventsPerGroup; round++) {
      for (let g = 0; g < options.groups; g += 500) {
        const batch = [];
        for (let i = g; i < Math.min(options.groups, g + 500); i++) {
          const n = round * options.groups + i;
          batch.push(
            makeEvent({
              kind: EventKind.MessageDirect,
              groupId: String(900_000 + i),
              source: 'bench',
              priority: PRIORITY.direct,
              notBefore,
              payload: sampleMessage(`一小时后再说 ${n}`, {
                messageId: `mem${n}`,
                sender: { userId: `u${n}`, nickname: `u${n}`, card: '', displayName: `u${n}`, role: 'member' },
                directReason: 'at',
                mentionsSelf: true,
              }),
            }),
          );
        }
        await log.appendAll(batch);
      }
      // Do not outrun the scheduler by more than a round: the backlog is the bus's, not the live state.
      await waitHandled(keys, stack, (round + 1) * options.groups - options.groups, partitions, scheduler.pid!);
    }
    await waitHandled(keys, stack, total, partitions, scheduler.pid!);
    const handledSeconds = (performance.now() - started) / 1000;
    await sleep(2000);
    const atEnd = rssMb(scheduler.pid!);
    // The live events stay; the intake is over. V8 gives back the heap it grew for the intake only once its memory
    // reducer sees the allocation rate drop (≈ 10–30 s later): what the scheduler holds for the live events is the
    // RSS after that, the intake's cost is the peak.
    await sleep(options.settleSeconds * 1000);
    const settled = rssMb(scheduler.pid!);
    let timers = 0;
    for (let p = 0; p < partitions; p++) timers += await stack.redis.zcard(keys.timers(p));
    const compaction = await heapCompactions(stack.url('scheduler'));
    return {
      scenario: 'scheduler-memory',
      rssMb: round(settled),
      rssAtEndMb: round(atEnd),
      peakRssMb: round(Math.max(peak, atEnd, settled)),
      settleSeconds: options.settleSeconds,
      startRssMb: round(startedRss),
      groups: options.groups,
      eventsPerGroup: options.eventsPerGroup,
      heapCapMb: options.heapMb ?? null,
      liveTimers: timers,
      eventsPerSec: round(total / handledSeconds),
      heapCompactQuietMs: options.heapCompactQuietMs ?? null,
      heapCompactions: compaction.count,
      heapCompactionsByThread: compaction.byThread,
      heapCompactionMs: round(compaction.seconds * 1000),
      nativeHeapTrimmedMb: round(compaction.trimmedMb),
      nativeHeapTrimMs: round(compaction.trimSeconds * 1000),
      heapTotalMb: round(compaction.heapTotalMb),
      heapUsedMb: round(compaction.heapUsedMb),
      externalMb: round(compaction.externalMb),
    };
  } finally {
    clearInterval(sampler);
    await stack.stop();
  }
}

const MB = 1024 * 1024;

/**
 * The compacting collections the scheduler's heap stewards ran (its `/metrics`): how many and their time in all,
 * and how many per thread (the main thread and, with `QUNLI_PROJECTOR=thread`, the log thread each have one); the
 * resident memory the native heap's trims after them gave back and their time (ADR 0043); and the main thread's
 * heap as its default metrics give it at the end.
 */
async function heapCompactions(schedulerUrl: string): Promise<{
  count: number;
  seconds: number;
  byThread: Record<string, number>;
  heapTotalMb: number;
  heapUsedMb: number;
  externalMb: number;
  trimmedMb: number;
  trimSeconds: number;
}> {
  const text = await (await fetch(`${schedulerUrl}/metrics`)).text();
  const series = (name: string) =>
    [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))].map((m) => ({
      thread: /thread="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '',
      value: Number(m[2]),
    }));
  const sum = (name: string) => series(name).reduce((total, s) => total + s.value, 0);
  const byThread = Object.fromEntries(series('qunli_heap_compactions_total').map((s) => [s.thread, s.value]));
  return {
    count: sum('qunli_heap_compactions_total'),
    seconds: sum('qunli_heap_compaction_seconds_sum'),
    byThread,
    heapTotalMb: sum('nodejs_heap_size_total_bytes') / MB,
    heapUsedMb: sum('nodejs_heap_size_used_bytes') / MB,
    externalMb: sum('nodejs_external_memory_bytes') / MB,
    trimmedMb: sum('qunli_heap_trim_released_bytes_total') / MB,
    trimSeconds: sum('qunli_heap_trim_seconds_sum'),
  };
}

/** Wait until the scheduler has set `count` not-before timers (each live event has one). */
async function waitHandled(
  keys: Keyspace,
  stack: BenchStack,
  count: number,
  partitions: number,
  pid: number,
): Promise<void> {
  for (;;) {
    if (!alive(pid)) throw new Error(`the scheduler (pid ${pid}) exited during the run; its log: ${stack.logDir}`);
    let timers = 0;
    for (let p = 0; p < partitions; p++) timers += await stack.redis.zcard(keys.timers(p));
    if (timers >= count) return;
    await sleep(250);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
