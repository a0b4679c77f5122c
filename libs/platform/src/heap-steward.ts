import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { isMainThread } from 'node:worker_threads';
import { Session } from 'node:inspector/promises';
import type { Counter, Histogram } from 'prom-client';
import { QunliConfig } from './config.js';
import {
  afterHeapCompaction,
  decideHeapCompaction,
  heapCompactionPolicy,
  INITIAL_HEAP_COMPACTION_STATE,
  type HeapCompactionPolicy,
  type HeapCompactionState,
} from './heap-compaction.rule.js';
import { Metrics, SHORT_SECONDS_BUCKETS } from './metrics.js';
import { bindNativeHeapTrim } from './native-heap.js';

/** Real ms between two samples of the event loop and the heap. */
const SAMPLE_MS = 1000;

/**
 * A full collection that gives memory back, in both generations. V8 shrinks its young generation only in a
 * collection made to reduce memory (or at an allocation rate far below even an idle scheduler's); the inspector's
 * `HeapProfiler.collectGarbage` is one, reached in-process without opening a port or exposing `gc`. It still keeps
 * every old page that holds a live object, and after a burst nearly every page does (a debugging run of the
 * scheduler: ≈ 55 MB live over 403 MB of old space), so it runs with `--compact-on-every-full-gc`, which V8 reads at each collection and which
 * is off again once it is over.
 */
async function collectAndCompact(): Promise<void> {
  const session = new Session();
  session.connect();
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    // V8 runs the collection as one task of its own, in a moment; nothing else runs on this thread meanwhile.
    await session.post('HeapProfiler.collectGarbage');
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
    session.disconnect();
  }
}

const MB = 1024 * 1024;

/**
 * Gives the heap a burst grew back once the process is quiet (ADR 0035): samples its event loop and committed heap
 * every second and, when `decideHeapCompaction` says so, runs one full collection that compacts. Every app has one;
 * `QUNLI_HEAP_COMPACT_QUIET_MS=0` turns it off. Real time, not the product clock: this is about the process, not
 * about the product's timers.
 */
@Injectable()
export class HeapSteward implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(HeapSteward.name);
  private readonly policy: HeapCompactionPolicy;
  private state: HeapCompactionState = INITIAL_HEAP_COMPACTION_STATE;
  private lastLoop: EventLoopUtilization | undefined;
  private timer: NodeJS.Timeout | undefined;
  private collecting: Promise<void> | undefined;
  private readonly compactions: Counter<'thread'>;
  private readonly released: Counter<'thread'>;
  private readonly pause: Histogram<'thread'>;
  private readonly trimmed: Counter<'thread'>;
  private readonly trimPause: Histogram<'thread'>;
  /** Each isolate has a heap, and a steward, of its own: the scheduler's log thread compacts its heap itself. */
  private readonly thread = isMainThread ? 'main' : 'worker';
  private trimUnavailableLogged = false;

  constructor(config: QunliConfig, metrics: Metrics) {
    this.policy = heapCompactionPolicy(config.QUNLI_HEAP_COMPACT_QUIET_MS);
    this.compactions = metrics.counter({
      name: 'qunli_heap_compactions_total',
      help: 'Compacting collections run once the thread was quiet after its heap had grown (ADR 0035)',
      labelNames: ['thread'],
    });
    this.released = metrics.counter({
      name: 'qunli_heap_compaction_released_bytes_total',
      help: 'Committed heap bytes those collections gave back',
      labelNames: ['thread'],
    });
    this.pause = metrics.histogram({
      name: 'qunli_heap_compaction_seconds',
      help: 'How long each of those collections held the event loop',
      labelNames: ['thread'],
      buckets: SHORT_SECONDS_BUCKETS,
    });
    this.trimmed = metrics.counter({
      name: 'qunli_heap_trim_released_bytes_total',
      help: 'Resident bytes the native heap gave back after those collections (glibc malloc_trim, ADR 0043)',
      labelNames: ['thread'],
    });
    this.trimPause = metrics.histogram({
      name: 'qunli_heap_trim_seconds',
      help: 'How long each of those trims held the event loop',
      labelNames: ['thread'],
      buckets: SHORT_SECONDS_BUCKETS,
    });
  }

  onApplicationBootstrap(): void {
    if (this.policy.quietForMs === 0) return;
    this.lastLoop = performance.eventLoopUtilization();
    this.timer = setInterval(() => {
      if (this.collecting) return;
      this.collecting = this.sample()
        .catch((error: unknown) => {
          // A node built without the inspector, say: the process keeps running as it would without a steward.
          clearInterval(this.timer);
          this.logger.warn({
            message: 'heap steward stopped: the process keeps the heap V8 sized from now on',
            error: error instanceof Error ? error.message : String(error),
          });
        })
        .finally(() => (this.collecting = undefined));
    }, SAMPLE_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.collecting;
  }

  private async sample(): Promise<void> {
    const loop = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(loop, this.lastLoop).utilization;
    this.lastLoop = loop;
    const atMs = performance.now();
    // The heap's own figure: `process.memoryUsage()` would also read the resident set, once a second for nothing.
    const before = getHeapStatistics().total_heap_size;
    const decision = decideHeapCompaction(this.state, { atMs, utilization, heapTotal: before }, this.policy);
    this.state = decision.state;
    if (!decision.compact) return;
    const started = performance.now();
    await collectAndCompact();
    const seconds = (performance.now() - started) / 1000;
    const after = getHeapStatistics().total_heap_size;
    // The collection's own time is not the application's: the next sample measures the loop from here.
    this.lastLoop = performance.eventLoopUtilization();
    this.state = afterHeapCompaction(performance.now(), after);
    const labels = { thread: this.thread };
    this.compactions.inc(labels);
    this.released.inc(labels, Math.max(0, before - after));
    this.pause.observe(labels, seconds);
    this.logger.log(
      `${this.thread} thread quiet after a burst: a compacting collection took ${(seconds * 1000).toFixed(0)} ms, committed heap ` +
        `${(before / MB).toFixed(0)} MB → ${(after / MB).toFixed(0)} MB`,
    );
    if (isMainThread) await this.trimNativeHeap();
  }

  /**
   * The collection gave V8's pages back; the native heap keeps the pages of what the burst freed (socket reads,
   * Buffers) until asked (ADR 0043). One trim serves the whole process, so only the main thread's steward asks.
   */
  private async trimNativeHeap(): Promise<void> {
    const binding = await bindNativeHeapTrim();
    if ('unavailable' in binding) {
      if (!this.trimUnavailableLogged) {
        this.trimUnavailableLogged = true;
        this.logger.log(`the native heap is not trimmed after a collection: ${binding.unavailable}`);
      }
      return;
    }
    const before = process.memoryUsage.rss();
    const started = performance.now();
    binding.trim();
    const ms = performance.now() - started;
    const after = process.memoryUsage.rss();
    this.lastLoop = performance.eventLoopUtilization();
    this.trimmed.inc({ thread: this.thread }, Math.max(0, before - after));
    this.trimPause.observe({ thread: this.thread }, ms / 1000);
    this.logger.log(
      `native heap trimmed in ${ms.toFixed(0)} ms: resident ${(before / MB).toFixed(0)} MB → ${(after / MB).toFixed(0)} MB`,
    );
  }
}
