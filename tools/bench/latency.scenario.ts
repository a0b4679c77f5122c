import { setTimeout as sleep } from 'node:timers/promises';
import { episodeJobId, EventKind, Keyspace, QueueName, type EventEnvelope } from '@app/contracts';
import { FakeOneBot } from '@app/testing';
import { LlmDouble } from '@app/testing';
import { groupBacklogs } from './backlog.js';
import { hopFloor, type HopFloorResult } from './hop-floor.js';
import { AmbientPacer, groupMessage, OneBotLoad, percentile, round } from './load.js';
import { busyShare, readMachineTicks } from './cpu-budget.js';
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

export interface LatencyOptions {
  directs: number;
  backgroundPerSec: number;
  groups: number;
  /** Scheduler processes (they split the partitions by lease). */
  schedulers?: number;
  /**
   * Background traffic before the first @ (`--warmup-ms`, 2,000 by default). The apps' first seconds under load
   * are slower (code not yet optimised, first reads of every group): a longer warm-up measures the steady state.
   */
  warmupMs?: number;
  /**
   * @s asked and answered during the warm-up and left out of the figures (`--warmup-directs`, 50 by default). The
   * ambient background never reaches cognition or outbound, so without them the first @s of the measured ones ran
   * code not yet optimised on every app of their path, and a run's p99 was its first seconds. They are reported on
   * their own (`warmupDirects`). 0 measures the first @s a started stack answers.
   */
  warmupDirects?: number;
  /**
   * `QUNLI_DEBOUNCE_DIRECT_MS` (`--direct-debounce-ms`): 0 unless given, so an @ is decided as it arrives; with the
   * default deployment's 800 an @ waits for its debounce timer, and the figures show how late timers fire.
   */
  directDebounceMs?: number;
  /** `QUNLI_PROJECTOR` (`--projector inline|thread`): where the scheduler runs the projector and keyword learning. */
  projector?: 'inline' | 'thread';
  /** Write a V8 CPU profile of each app into this directory (`--cpu-prof DIR`). */
  cpuProfDir?: string;
  /**
   * Time between two @s (`--spacing-ms`, 200 by default). A bot in quiet groups sees an @ after seconds or minutes
   * of silence, when idle connections (Postgres pools, HTTP keep-alive) may have closed: a spacing longer than
   * their idle timeouts measures that @.
   */
  spacingMs?: number;
  /**
   * Measure the hop floor first (`--floor`, `hop-floor.ts`): the same background and @s through processes that do
   * only the hops of an @'s way, so the run reports how much of its latency is this machine's hand-overs and how much
   * is qunli's work.
   */
  floor?: boolean;
}

/**
 * Time from posting an @-mention to the OneBot implementation receiving `send_group_msg`, with an LLM double that
 * answers instantly: the runtime's own overhead. Measured while ambient messages arrive at `backgroundPerSec`.
 */
export async function latency(options: LatencyOptions): Promise<Record<string, unknown>> {
  const llm = await LlmDouble.start({
    replyText: (body) => `答：${/问题#(\d+)/.exec(JSON.stringify(body.messages))?.[1] ?? '?'}`,
    // A provider's front end keeps an idle connection a minute or more (Node's own server: 5 s).
    keepAliveMs: 75_000,
  });
  const onebot = new FakeOneBot({ accessToken: BENCH_TOKEN, secret: BENCH_SECRET, selfId: BENCH_SELF_ID });
  await onebot.start();
  const stack = new BenchStack(
    ['ingress', 'scheduler', 'cognition', 'outbound'],
    {
      OPENAI_BASE_URL: llm.baseUrl,
      OPENAI_API_KEY: 'bench',
      ONEBOT_HTTP_API_URL: onebot.url,
      QUNLI_COGNITION_CONCURRENCY: '16',
      // No configured delays unless asked for: an @ is decided as it arrives.
      QUNLI_DEBOUNCE_DIRECT_MS: String(options.directDebounceMs ?? 0),
      ...(options.projector ? { QUNLI_PROJECTOR: options.projector } : {}),
    },
    options.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : [],
    undefined,
    { scheduler: options.schedulers ?? 1 },
  );
  let floor: HopFloorResult | undefined;
  const sentAt = new Map<string, number>();
  const postedWall = new Map<string, number>();
  const receivedWall = new Map<string, number>();
  const latencies: number[] = [];
  const warmupSentAt = new Map<string, number>();
  const warmupLatencies = new Map<string, number>();
  onebot.onSend((message) => {
    const warmupStarted = warmupSentAt.get(message.text);
    if (warmupStarted !== undefined) {
      warmupLatencies.set(message.text, performance.now() - warmupStarted);
      return;
    }
    const started = sentAt.get(message.text);
    if (started !== undefined) latencies.push(performance.now() - started);
    receivedWall.set(message.text, Date.now());
  });
  try {
    // Before the stack starts, so the two never share the machine.
    if (options.floor) {
      floor = await hopFloor({
        redisUrl: stack.redisUrl,
        llmBaseUrl: llm.baseUrl,
        onebot,
        onebotToken: BENCH_TOKEN,
        selfId: BENCH_SELF_ID,
        backgroundPerSec: options.backgroundPerSec,
        groups: options.groups,
        directs: options.directs,
        warmupDirects: options.warmupDirects ?? 50,
        warmupMs: options.warmupMs ?? 2000,
        spacingMs: options.spacingMs ?? 200,
      });
    }
    await stack.start();
    const background = new OneBotLoad(stack.url('ingress'), 32);
    const direct = new OneBotLoad(stack.url('ingress'), 4);
    const pacer = new AmbientPacer(background, options.backgroundPerSec, options.groups);
    const backgroundStarted = performance.now();
    const backgroundRun = pacer.run();

    // @ number k asks 问题#k in a group of its own (while the @s number at most `groups`); the double answers 答：k.
    const ask = async (k: number, asked: Map<string, number>): Promise<void> => {
      asked.set(`答：${k}`, performance.now());
      await direct.post(groupMessage(300_000 + ((k * 7919) % options.groups), 21_000 + k, `问题#${k}`, true));
      await sleep(options.spacingMs ?? 200);
    };
    // Warm-up @s are numbered after the measured ones, so no answer can be taken for a measured @'s.
    const warmupDirects = options.warmupDirects ?? 50;
    for (let w = 0; w < warmupDirects; w++) await ask(options.directs + w, warmupSentAt);
    const warmupLeft = (options.warmupMs ?? 2000) - (performance.now() - backgroundStarted);
    if (warmupLeft > 0) await sleep(warmupLeft);
    const warmupDeadline = Date.now() + 30_000;
    while (warmupLatencies.size < warmupDirects && Date.now() < warmupDeadline) await sleep(50);
    const keys = new Keyspace(stack.prefix, 16);
    const cpuBefore = stack.cpuMs();
    const serversBefore = serversCpu();
    const machineBefore = readMachineTicks();
    const llmConnectionsBefore = llm.connections;
    const backlogBefore = await schedulerBacklog(stack, keys);
    const directsStarted = performance.now();
    for (let k = 0; k < options.directs; k++) {
      postedWall.set(`答：${k}`, Date.now());
      await ask(k, sentAt);
    }
    const backlogAfter = await schedulerBacklog(stack, keys);
    const directsSeconds = (performance.now() - directsStarted) / 1000;
    const deadline = Date.now() + 30_000;
    while (latencies.length < options.directs && Date.now() < deadline) await sleep(50);
    const cpuAfter = stack.cpuMs();
    const serversAfter = serversCpu();
    const machineAfter = readMachineTicks();
    const llmConnections = llm.connections - llmConnectionsBefore;
    const urgent = await urgentWaits(stack.url('scheduler'));
    const sections = await promptSections(stack.url('cognition'));
    const decidedLate = await stack.counterTotal('scheduler', 'qunli_scheduler_ambient_late_total');
    const sentByThen = pacer.sent;
    await backgroundRun.stop();
    const backgroundMsgPerSec = pacer.sent / ((performance.now() - backgroundStarted) / 1000);
    await background.close();
    await direct.close();
    const sorted = [...latencies].sort((a, b) => a - b);
    const stages = await stageBreakdown(stack, keys, postedWall, receivedWall);
    return {
      scenario: 'latency',
      schedulers: options.schedulers ?? 1,
      warmupMs: options.warmupMs ?? 2000,
      // The warm-up @s: how many were answered, how long the first one asked took, and their p50.
      warmupDirects: {
        asked: warmupDirects,
        answered: warmupLatencies.size,
        firstMs: round(warmupLatencies.get(`答：${options.directs}`) ?? Number.NaN),
        p50Ms: round(
          percentile(
            [...warmupLatencies.values()].sort((a, b) => a - b),
            50,
          ),
        ),
      },
      spacingMs: options.spacingMs ?? 200,
      directDebounceMs: options.directDebounceMs ?? 0,
      projector: options.projector ?? 'inline',
      p50Ms: round(percentile(sorted, 50)),
      p99Ms: round(percentile(sorted, 99)),
      // The same load through the hops alone (`--floor`), and what qunli adds over them.
      ...(floor && {
        hopFloor: floor,
        overFloorMs: {
          p50: round(percentile(sorted, 50) - floor.p50Ms),
          p99: round(percentile(sorted, 99) - floor.p99Ms),
        },
      }),
      backgroundMsgPerSec: round(backgroundMsgPerSec),
      directs: options.directs,
      answered: latencies.length,
      maxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
      stagesP50Ms: stages.p50,
      stagesP99Ms: stages.p99,
      stagesMeanMs: stages.mean,
      queueStagesP50Ms: stages.queueP50,
      queueStagesP99Ms: stages.queueP99,
      // Background entries the scheduler's consumer group had not handled (unread + read and not acknowledged)
      // when the first @ was posted and when the last was, and how fast that grew: above zero, the scheduler did not
      // keep up with the background, and each @ waited behind a longer backlog of its own group than the one before.
      schedulerBacklog: {
        atFirstDirect: backlogBefore,
        atLastDirect: backlogAfter,
        growthPerSec: round((backlogAfter - backlogBefore) / directsSeconds),
      },
      // Inside the scheduler's consumer group (its `/metrics`, whole run: the warm-up @s' included), per urgent
      // entry — each @ and the episode events that carry its priority (two per @ here): the entries of its own group
      // held before it when it was read, and the time from its read to its own turn.
      schedulerUrgent: urgent,
      // Inside the queue stage's prep, per episode (cognition's `/metrics`, whole run): the mean time of each prompt
      // section provider, read side by side from Postgres; the episode waits for the slowest.
      promptSectionMeanMs: sections,
      // Background messages the scheduler read more than QUNLI_AMBIENT_LATE_MS after they were sent and so judged
      // without their debounce wait (ADR 0038), per background message sent until the last @ was answered.
      ambientDecidedLatePerMessage: round(decidedLate / Math.max(1, sentByThen), 3),
      // TCP connections cognition opened to the LLM double while the @s were answered, per @ (ADR 0040): an @ that
      // finds the last call's connection idle opens none.
      llmConnectionsPerDirect: round(llmConnections / options.directs, 2),
      // CPU each app spent while the @s were asked and answered (background included), per @.
      cpuMsPerDirect: Object.fromEntries(
        Object.entries(cpuAfter).map(([app, ms]) => [app, round((ms - (cpuBefore[app] ?? 0)) / options.directs)]),
      ),
      // The same for Redis, Postgres (every process of the server) and this bench process, which posts the load.
      serverCpuMsPerDirect: Object.fromEntries(
        Object.entries({
          postgres: cpuSpentMs(serversBefore.postgres, serversAfter.postgres),
          redis: cpuSpentMs(serversBefore.redis, serversAfter.redis),
          loadGenerator: (serversAfter.loadGenerator - serversBefore.loadGenerator) / 1000,
        }).flatMap(([part, ms]) => (ms === undefined ? [] : [[part, round(ms / options.directs)]])),
      ),
      // The share of the whole machine's CPU time that was busy meanwhile (`/proc/stat`, every process on it). Near 1,
      // every hop of an @ waits for a core, and the scheduler's backlog grows.
      machineBusyShare: busyShare(machineBefore, machineAfter) ?? null,
    };
  } finally {
    await stack.stop();
    await onebot.stop();
    await llm.close();
  }
}

/**
 * The scheduler consumer group's urgent-entry histograms (`qunli_stream_urgent_*`): count and means; and the mean
 * time of one of its turns, urgent or not (`qunli_stream_handler_seconds`, whole run): what each entry ahead costs.
 */
async function urgentWaits(
  schedulerUrl: string,
): Promise<{ count: number; aheadMean: number; waitMeanMs: number; turnMeanMs: number }> {
  const text = await (await fetch(`${schedulerUrl}/metrics`)).text();
  const value = (name: string) =>
    Number(new RegExp(`^${name}\\{[^}]*group="scheduler"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const count = value('qunli_stream_urgent_wait_seconds_count');
  return {
    count,
    aheadMean: round(value('qunli_stream_urgent_ahead_sum') / value('qunli_stream_urgent_ahead_count')),
    waitMeanMs: round((value('qunli_stream_urgent_wait_seconds_sum') / count) * 1000),
    turnMeanMs: round((value('qunli_stream_handler_seconds_sum') / value('qunli_stream_handler_seconds_count')) * 1000),
  };
}

/** The mean time of each prompt section provider that answered (`qunli_prompt_section_seconds{outcome="ok"}`), ms. */
async function promptSections(cognitionUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${cognitionUrl}/metrics`)).text();
  const totals = new Map<string, { sum: number; count: number }>();
  for (const [, kind, labels, value] of text.matchAll(
    /^qunli_prompt_section_seconds_(sum|count)\{([^}]*)\} (\S+)$/gm,
  )) {
    if (!labels!.includes('outcome="ok"')) continue;
    const section = /section="([^"]+)"/.exec(labels!)?.[1] ?? '?';
    const total = totals.get(section) ?? { sum: 0, count: 0 };
    total[kind as 'sum' | 'count'] += Number(value);
    totals.set(section, total);
  }
  return Object.fromEntries([...totals].map(([section, t]) => [section, round((t.sum / t.count) * 1000)]));
}

/** CPU so far of the Postgres and Redis servers' processes (by pid, ms) and of this process (µs). */
function serversCpu() {
  const { user, system } = process.cpuUsage();
  return {
    postgres: serverCpuMs(POSTGRES_COMMS),
    redis: serverCpuMs(REDIS_COMMS),
    loadGenerator: user + system,
  };
}

/** Entries of every partition the scheduler's own consumer group has not handled yet. */
async function schedulerBacklog(stack: BenchStack, keys: Keyspace): Promise<number> {
  const backlog = (await groupBacklogs(stack.redis, keys))['scheduler'];
  return backlog ? backlog.unread + backlog.pending : 0;
}

const STAGES = ['ingress', 'scheduler', 'queue', 'cognition', 'outbound'] as const;
/** The queue stage cut by the episode job's own BullMQ timestamps (added, taken by a worker). */
const QUEUE_STAGES = ['dispatch', 'pickup', 'prep'] as const;

/**
 * Where the time of each @ went, from the envelopes' `createdAt` (ms, one machine clock): ingress (post →
 * `message.direct` appended), scheduler (→ `decision.made`: stream read, decision, dispatch), queue (→
 * `episode.started`: BullMQ hand-over to a cognition worker), cognition (→ `action.send`: prompt, LLM double,
 * append), outbound (→ `send_group_msg` received by the OneBot double). The queue stage is cut again by the
 * episode job's BullMQ timestamps: dispatch (→ job added: the grant, in the scheduler process), pickup (→ a worker
 * took it) and prep (→ `episode.started`: the episode's state and prompt sections read).
 */
async function stageBreakdown(
  stack: BenchStack,
  keys: Keyspace,
  posted: Map<string, number>,
  received: Map<string, number>,
): Promise<{
  p50: Record<string, number>;
  p99: Record<string, number>;
  mean: Record<string, number>;
  queueP50: Record<string, number>;
  queueP99: Record<string, number>;
}> {
  const events: EventEnvelope[] = [];
  for (let p = 0; p < keys.partitions; p++) {
    for (const [, fields] of await stack.redis.xrange(keys.stream(p), '-', '+')) {
      const kind = fields[fields.indexOf('k') + 1];
      if (kind === EventKind.MessageObserved) continue;
      events.push(JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope);
    }
  }
  const at = (e: EventEnvelope | undefined) => (e ? Date.parse(e.createdAt) : Number.NaN);
  const byKind = (kind: string, key: (e: EventEnvelope) => string) =>
    new Map(events.filter((e) => e.kind === kind).map((e) => [key(e), e]));
  const pay = (e: EventEnvelope) => e.payload as Record<string, string>;
  const decisions = byKind(EventKind.DecisionMade, (e) => pay(e).subjectEventId!);
  const starts = byKind(EventKind.EpisodeStarted, (e) => pay(e).triggerEventId!);
  const actions = byKind(EventKind.ActionSend, (e) => pay(e).triggerEventId!);
  const samples: Record<string, number[]> = Object.fromEntries([...STAGES, ...QUEUE_STAGES].map((s) => [s, []]));
  for (const direct of events.filter((e) => e.kind === EventKind.MessageDirect)) {
    const k = /问题#(\d+)/.exec(pay(direct).text ?? '')?.[1];
    const answer = `答：${k}`;
    const times = [
      posted.get(answer),
      at(direct),
      at(decisions.get(direct.id)),
      at(starts.get(direct.id)),
      at(actions.get(direct.id)),
      received.get(answer),
    ];
    if (times.some((t) => t === undefined || Number.isNaN(t))) continue;
    STAGES.forEach((stage, i) => samples[stage]!.push(times[i + 1]! - times[i]!));
    const start = starts.get(direct.id)!;
    const job = await stack.redis.hmget(
      `${keys.bullPrefix}:${QueueName.Episodes}:${episodeJobId(pay(start).episodeId!)}`,
      'timestamp',
      'processedOn',
    );
    const [added, taken] = job.map(Number);
    if (!added || !taken) continue;
    const cuts = [at(decisions.get(direct.id)), added, taken, at(start)];
    QUEUE_STAGES.forEach((stage, i) => samples[stage]!.push(cuts[i + 1]! - cuts[i]!));
  }
  const pick = (p: number, stages: readonly string[] = STAGES) =>
    Object.fromEntries(
      stages.map((s) => [
        s,
        round(
          percentile(
            [...samples[s]!].sort((a, b) => a - b),
            p,
          ),
        ),
      ]),
    );
  // The mean, unlike the percentiles of whole milliseconds, moves with a change of a fraction of one.
  const mean = Object.fromEntries(
    [...STAGES, ...QUEUE_STAGES].map((s) => [
      s,
      Math.round((samples[s]!.reduce((sum, v) => sum + v, 0) / samples[s]!.length) * 100) / 100,
    ]),
  );
  return {
    p50: pick(50),
    p99: pick(99),
    mean,
    queueP50: pick(50, QUEUE_STAGES),
    queueP99: pick(99, QUEUE_STAGES),
  };
}
