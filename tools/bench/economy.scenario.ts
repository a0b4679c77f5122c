import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Keyspace } from '@app/contracts';
import { Clock } from '@app/platform';
import { backlogTotal, readBacklog } from '../harness/backlog.js';
import { LlmProvider } from '../harness/llm-provider.js';
import { OneBotPeer } from '../harness/onebot-peer.js';
import { OneBotPoster } from '../harness/onebot-poster.js';
import { HarnessStack } from '../harness/stack.js';
import { quiescence } from '../harness/wait.js';
import { economyFigures, type HandledMessage } from '../economy/economy.figures.js';
import { parseTranscript } from '../economy/transcript.js';

export interface EconomyOptions {
  input: string;
  /** Replay this many times faster than the transcript; also the apps' `QUNLI_TIME_SCALE`. */
  speed: number;
  /** Median LLM latency in product milliseconds (the double divides it by `speed`). */
  llmLatencyMs: number;
  /** Quiet wall time after the last event that counts as done. */
  quietMs: number;
}

/**
 * What a run counts ends this long in product time after the transcript's last event: a thread's idle summary comes
 * `QUNLI_MEMORY_THREAD_IDLE_MINUTES` (20 by default) after its last message, and the two minutes more let it finish.
 * A fixed product-time horizon makes the figures the same at any `--speed`; a wall-time quiet period alone counted
 * more of the later work the faster the replay ran.
 */
const HORIZON_MS = 22 * 60_000;

const TOKEN = 'economy-token';
const SECRET = 'economy-secret';
const PARTITIONS = 8;
const REPLIES = [
  '哈哈真的吗',
  '我觉得还行诶',
  '这个我也想知道',
  '好耶',
  '等我看看哈',
  '芋圆也这么觉得',
  '确实确实',
  '冲！',
];

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) >>> 0;
  return h;
}

/**
 * Replays a JSON Lines transcript of OneBot events through the five apps with their original spacing divided by
 * `speed`, every app on the same scaled clock (`QUNLI_TIME_SCALE` = speed, one `QUNLI_TIME_EPOCH`), each event's
 * `time` restamped with product time at the moment it is posted; an LLM double with provider-like latency and
 * usage answers with tool calls. After the replay goes idle, reads who was answered and what it cost.
 */
export async function economy(options: EconomyOptions): Promise<Record<string, unknown>> {
  const transcript = parseTranscript(readFileSync(options.input, 'utf8'), options.input);
  const firstSelfId = transcript[0]!.event.self_id;
  const selfId = typeof firstSelfId === 'number' || typeof firstSelfId === 'string' ? String(firstSelfId) : '10001';
  const epoch = new Date();
  const clock = new Clock(options.speed, epoch.getTime());
  const peer = new OneBotPeer({ selfId, accessToken: TOKEN, nickname: '林小满' });
  await peer.start();
  const llm = await LlmProvider.start({
    medianLatencyMs: options.llmLatencyMs,
    timeScale: options.speed,
    reply: (current) => REPLIES[hash(current) % REPLIES.length]!,
  });
  const stack = new HarnessStack({
    label: 'economy',
    apps: ['ingress', 'scheduler', 'cognition', 'outbound', 'life-director'],
    ownRedis: true,
    env: {
      QUNLI_SELF_ID: selfId,
      ONEBOT_ACCESS_TOKEN: TOKEN,
      ONEBOT_SECRET: SECRET,
      ONEBOT_HTTP_API_URL: peer.url,
      OPENAI_BASE_URL: llm.baseUrl,
      OPENAI_API_KEY: 'economy-key',
      // The harness provider answers plain JSON, not server-sent events.
      QUNLI_LLM_STREAM: 'false',
      QUNLI_PARTITIONS: String(PARTITIONS),
      QUNLI_TIME_SCALE: String(options.speed),
      QUNLI_TIME_EPOCH: epoch.toISOString(),
    },
  });
  const started = Date.now();
  let posted = 0;
  let refused = 0;
  let lateMsMax = 0;
  let lastPostedAt = Date.now();
  try {
    await stack.start();
    const poster = new OneBotPoster(stack.url('ingress'), {
      selfId,
      accessToken: TOKEN,
      secret: SECRET,
      connections: 4,
    });
    const first = transcript[0]!.time;
    const replayStart = Date.now() + 500;
    for (const { time, event } of transcript) {
      const due = replayStart + ((time - first) * 1000) / options.speed;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      else lateMsMax = Math.max(lateMsMax, -wait);
      // Posted in order, one after the other: the transcript's order within a second is kept.
      const taken = await poster.postUntilTaken({ ...event, time: Math.floor(clock.nowMs() / 1000) }, 30_000);
      posted += 1;
      if (!taken.taken) refused += 1;
      lastPostedAt = Date.now();
    }
    const replaySeconds = (Date.now() - replayStart) / 1000;
    await poster.close();
    // The horizon: the LLM calls and the memory work counted are those made before it.
    await sleep(Math.max(0, HORIZON_MS / options.speed - (Date.now() - lastPostedAt)));
    const horizonAt = Date.now();
    const memory = await memoryCalls(stack.url('life-director'));
    const counted = llm.calls.filter((c) => c.at <= horizonAt);
    const keys = new Keyspace(stack.prefix, PARTITIONS);
    const settled = await quiescence(
      async () => {
        const { rows } = await stack.sql.query<{ n: string }>(
          `SELECT (SELECT count(*) FROM event_log) + (SELECT count(*) FROM episodes WHERE state = 'final') AS n`,
        );
        const backlog = backlogTotal(await readBacklog(stack.redis, keys));
        return `${rows[0]?.n} ${peer.deliveries.length} ${llm.calls.length} ${backlog === 0 ? 'idle' : Date.now()}`;
      },
      options.quietMs,
      600_000,
    );

    const messages = await stack.sql.query<{
      group_id: string | null;
      direct: boolean;
      deliberated: boolean;
      answered: boolean;
    }>(
      `SELECT m.group_id, coalesce(m.direct, false) AS direct,
              (e.episode_id IS NOT NULL OR EXISTS (SELECT 1 FROM episodes ep WHERE ep.trigger_event_id = m.event_id)) AS deliberated,
              EXISTS (SELECT 1 FROM sends s WHERE s.state = 'sent'
                        AND (s.trigger_event_id = m.event_id OR (e.episode_id IS NOT NULL AND s.episode_id = e.episode_id))) AS answered
         FROM messages m LEFT JOIN events e ON e.id = m.event_id
        WHERE coalesce(m.from_self, false) = false`,
    );
    const episodes = await stack.sql.query<{ direct: boolean; steps: number; llmCalls: number }>(
      `SELECT coalesce(m.direct, false) AS direct, coalesce(ep.steps, 0)::int AS steps,
              (SELECT count(*) FROM llm_calls c WHERE c.episode_id = ep.id)::int AS "llmCalls"
         FROM episodes ep LEFT JOIN messages m ON m.event_id = ep.trigger_event_id`,
    );
    const deliveriesByTarget: Record<string, number> = {};
    for (const d of peer.deliveries) {
      const target = `${d.messageType}:${d.targetId}`;
      deliveriesByTarget[target] = (deliveriesByTarget[target] ?? 0) + 1;
    }
    const figures = economyFigures({
      messages: messages.rows.map((r): HandledMessage => ({
        groupId: r.group_id,
        direct: r.direct,
        deliberated: r.deliberated,
        answered: r.answered,
      })),
      episodes: episodes.rows,
      llmCalls: counted.length + llm.abandoned,
      llmTokens: counted.reduce((sum, c) => sum + c.promptTokens + c.completionTokens, 0),
      deliveriesByTarget,
    });
    return {
      scenario: 'economy',
      ...figures,
      memoryLlmCallsByWork: memory.byWork,
      memoryLlmCallsByOutcome: memory.byOutcome,
      llmCallsByModel: Object.fromEntries(
        [...new Set(counted.map((c) => c.model))].map((model) => [
          model,
          counted.filter((c) => c.model === model).length,
        ]),
      ),
      horizonMinutes: HORIZON_MS / 60_000,
      llmCallsAfterHorizon: llm.calls.length - counted.length,
      privateSends: Object.entries(deliveriesByTarget)
        .filter(([t]) => t.startsWith('private:'))
        .reduce((sum, [, n]) => sum + n, 0),
      events: transcript.length,
      posted,
      refused,
      speed: options.speed,
      transcriptMinutes: Math.round(((transcript[transcript.length - 1]!.time - transcript[0]!.time) / 60) * 10) / 10,
      replaySeconds: Math.round(replaySeconds),
      postLateMsMax: Math.round(lateMsMax),
      settled,
      llmLatencyMedianMs: options.llmLatencyMs,
      tokensEstimated: true,
      droppedSettings: stack.droppedSettings,
      wallSeconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    await stack.stop();
    await llm.close();
    await peer.stop();
  }
}

/**
 * The life director's own count of utils-model calls, by work (summary, jargon, life_detail) and by outcome (ok;
 * partial: part of the answer unusable; invalid: an unusable answer; failed: the call threw).
 */
async function memoryCalls(
  url: string,
): Promise<{ byWork: Record<string, number>; byOutcome: Record<string, number> }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const byWork: Record<string, number> = {};
  const byOutcome: Record<string, number> = {};
  for (const m of text.matchAll(/^qunli_memory_llm_calls_total\{([^}]*)\} (\S+)$/gm)) {
    const work = /work="([^"]*)"/.exec(m[1]!)?.[1] ?? 'unknown';
    const outcome = /outcome="([^"]*)"/.exec(m[1]!)?.[1] ?? 'unknown';
    byWork[work] = (byWork[work] ?? 0) + Number(m[2]);
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + Number(m[2]);
  }
  return { byWork, byOutcome };
}
