import { setTimeout as sleep } from 'node:timers/promises';
import type { WebSocket } from 'ws';
import { Keyspace } from '@app/contracts';
import type { AppUnderTest } from '@app/testing';
import { classifyAnswer } from '../harness/ingress-answer.rules.js';
import { LlmProvider } from '../harness/llm-provider.js';
import { groupMessage, seg } from '../harness/onebot-events.js';
import { loadEventFixtures, samplePayloads, type PayloadContext } from '../harness/onebot-payloads.js';
import { OneBotPeer } from '../harness/onebot-peer.js';
import { OneBotPoster } from '../harness/onebot-poster.js';
import { backlogTotal, readBacklog, type Backlog } from '../harness/backlog.js';
import { HarnessStack } from '../harness/stack.js';
import { quiescence } from '../harness/wait.js';
import { chaosFigures, type ChaosFigures } from './chaos.figures.js';
import { chaosReply, planTraffic, trafficEvent, type TrafficItem } from './chaos.traffic.js';

/** The projector runs inside the scheduler today: killing "the projector" means killing what hosts it. */
export const PROJECTOR_HOST: AppUnderTest = 'scheduler';

export type Disruption =
  | { kind: 'crash'; target: 'ingress' | 'scheduler' | 'cognition' | 'outbound' | 'projector' }
  | { kind: 'freeze'; target: string; ms: number }
  | { kind: 'redis-restart'; crash: boolean }
  | { kind: 'postgres-outage'; ms: number };

export interface ChaosOptions {
  messages: number;
  groups: number;
  mentionShare: number;
  /** Messages posted per second; by default paced so the traffic lasts as long as the disruptions. */
  rate?: number;
  /** Calm between two disruptions (traffic goes on). */
  gapMs: number;
  seed: number;
  disruptions: Disruption[];
  /** Malformed payloads per second thrown at ingress during the run (HTTP and reverse WS). */
  malformedPerSecond: number;
  /** Median LLM latency (ms). */
  llmLatencyMs: number;
  outboundReplicas: number;
  cognitionReplicas: number;
  /** Quiet time that counts as "settled", and the most to wait for it. */
  quietMs: number;
  settleTimeoutMs: number;
  log: (line: string) => void;
}

export interface ChaosReport extends ChaosFigures {
  /** Whether the runtime went idle (no backlog, nothing moving) before the settle timeout. */
  settled: boolean;
  /** What was left when the figures were read (0 everywhere when settled). */
  backlog: Backlog;
  /** Messages ingress refused or that could not be delivered while it was down (not in `accepted`). */
  notTaken: number;
  postAttempts: number;
  disruptions: { what: string; atMessage: number; seconds: number }[];
  poison: { ingressAnswer: string; injectedEntries: number; deadLetters: number };
  malformed: { sent: number; accepted: number; rejected: number; unanswered: number };
  llmCalls: number;
  deliveries: number;
  /** Why the unanswered @-mentions went unanswered, from the read models: `event state / episode / sends` → count. */
  unansweredWhy: Record<string, number>;
  /** Why parts were delivered twice: how many send actions of the log carry the part, and their states → count. */
  duplicateWhy: Record<string, number>;
  /** Processes that exited on their own (not killed by the harness). */
  unexpectedExits: string[];
  droppedSettings: string[];
  logDir: string;
}

const SELF_ID = '10001';
const TOKEN = 'chaos-token';
const SECRET = 'chaos-secret';
const PARTITIONS = 8;
const LEASE_MS = 3000;
const CLAIM_IDLE_MS = 5000;

/** How long to freeze a process so its partition leases and stream claims have certainly expired. */
export const PAST_CLAIM_MS = Math.max(LEASE_MS, CLAIM_IDLE_MS) + 3000;

/** About how long a disruption takes, to pace the traffic over all of them. */
export function expectedMs(d: Disruption): number {
  switch (d.kind) {
    case 'crash':
      return 6000;
    case 'freeze':
      return d.ms;
    case 'redis-restart':
      return 3000;
    case 'postgres-outage':
      return d.ms;
  }
}

export function describeDisruption(d: Disruption): string {
  switch (d.kind) {
    case 'crash':
      return `SIGKILL ${d.target}${d.target === 'projector' ? ` (in ${PROJECTOR_HOST})` : ''}`;
    case 'freeze':
      return `SIGSTOP ${d.target} ${d.ms} ms, SIGCONT`;
    case 'redis-restart':
      return d.crash ? 'redis-server SIGKILL + start (AOF everysec)' : 'redis-server SHUTDOWN + start (AOF everysec)';
    case 'postgres-outage':
      return `Postgres cut ${d.ms} ms (proxy)`;
  }
}

/**
 * Drives `messages` chat messages (a share of them @-mentions) across `groups` groups through the real apps while
 * the disruptions run one after another, spread over the traffic; throws a poison message, poison stream entries
 * and a stream of malformed payloads in; waits for quiescence; then reads the figures from the OneBot peer's
 * record, the LLM double and Postgres.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const peer = new OneBotPeer({ selfId: SELF_ID, accessToken: TOKEN });
  await peer.start();
  const llm = await LlmProvider.start({ medianLatencyMs: options.llmLatencyMs, msPerToken: 0, reply: chaosReply });
  const stack = new HarnessStack({
    label: 'chaos',
    apps: ['ingress', 'scheduler', 'cognition', 'outbound'],
    replicas: { outbound: options.outboundReplicas, cognition: options.cognitionReplicas },
    ownRedis: true,
    postgresProxy: true,
    env: {
      QUNLI_SELF_ID: SELF_ID,
      ONEBOT_ACCESS_TOKEN: TOKEN,
      ONEBOT_SECRET: SECRET,
      ONEBOT_HTTP_API_URL: peer.url,
      OPENAI_BASE_URL: llm.baseUrl,
      OPENAI_API_KEY: 'chaos-key',
      // The harness provider answers plain JSON, not server-sent events.
      QUNLI_LLM_STREAM: 'false',
      QUNLI_PARTITIONS: String(PARTITIONS),
      QUNLI_LEASE_MS: String(LEASE_MS),
      QUNLI_CLAIM_IDLE_MS: String(CLAIM_IDLE_MS),
      // Two short lines per reply, so every reply is sent as two parts and part order is observable.
      QUNLI_SEND_MAX_SEGMENT_CHARS: '20',
      // The run measures loss, duplicates and order under failure, not the pace that protects a real account: at
      // the default 5 messages a second across groups (20 a minute per group) the ~5,000 replies of 10,000
      // messages, two parts each, would take half an hour to go out and most @s would expire waiting. The pace
      // itself is outbound's tests' and the economy bench's subject.
      QUNLI_SEND_GLOBAL_PER_SECOND: '200',
      QUNLI_SEND_GROUP_PER_MINUTE: '600',
      QUNLI_SEND_GROUP_BURST: '20',
      QUNLI_COGNITION_CONCURRENCY: '8',
      QUNLI_LLM_TIMEOUT_MS: '20000',
      QUNLI_ONEBOT_TIMEOUT_MS: '5000',
    },
  });
  const items = planTraffic({
    messages: options.messages,
    groups: options.groups,
    mentionShare: options.mentionShare,
    seed: options.seed,
  });
  const accepted: TrafficItem[] = [];
  const report: Omit<ChaosReport, keyof ChaosFigures> = {
    settled: false,
    backlog: { unread: 0, pending: 0, jobs: 0 },
    notTaken: 0,
    postAttempts: 0,
    disruptions: [],
    poison: { ingressAnswer: '', injectedEntries: 0, deadLetters: 0 },
    malformed: { sent: 0, accepted: 0, rejected: 0, unanswered: 0 },
    llmCalls: 0,
    deliveries: 0,
    unansweredWhy: {},
    duplicateWhy: {},
    unexpectedExits: [],
    droppedSettings: [],
    logDir: stack.logDir,
  };
  let posted = 0;
  let trafficDone = false;

  try {
    await stack.start();
    report.droppedSettings = stack.droppedSettings;
    options.log(
      `stack up (logs in ${stack.logDir}); ${items.length} messages, ${items.filter((i) => i.mention).length} @`,
    );
    const poster = new OneBotPoster(stack.url('ingress'), {
      selfId: SELF_ID,
      accessToken: TOKEN,
      secret: SECRET,
      connections: 32,
    });
    await injectPoison(stack, poster, items[0]?.groupId ?? '700000', report);

    const killed = new Set<string>();
    // The traffic is spread evenly over the phases between disruptions: it may not run ahead of its share while a
    // disruption is pending, and each phase is paced to last about as long as its disruption.
    const total = options.disruptions.length;
    let completed = 0;
    const quota = () =>
      completed >= total ? options.messages : Math.floor((options.messages * (completed + 1)) / (total + 1));
    const paceFor = (d: Disruption | undefined) =>
      options.rate ?? Math.max(1, (quota() - posted) / ((options.gapMs + (d ? expectedMs(d) : 0)) / 1000));
    let rate = paceFor(options.disruptions[0]);
    const traffic = (async () => {
      let nextAt = Date.now();
      const inFlight = new Set<Promise<void>>();
      for (const item of items) {
        while (posted >= quota()) await sleep(50);
        if (nextAt > Date.now()) await sleep(nextAt - Date.now());
        nextAt = Math.max(nextAt, Date.now() - 1000) + 1000 / rate;
        while (inFlight.size >= 64) await Promise.race(inFlight);
        const task = poster
          .postUntilTaken(trafficEvent(item, SELF_ID, Math.floor(Date.now() / 1000)), 300_000)
          .then((taken) => {
            report.postAttempts += taken.attempts;
            if (taken.taken) accepted.push(item);
            else {
              report.notTaken += 1;
              options.log(
                `message ${item.token} not taken: ${taken.last.status} ${taken.last.error ?? taken.last.body}`,
              );
            }
          })
          .finally(() => inFlight.delete(task));
        inFlight.add(task);
        posted = item.index + 1;
      }
      await Promise.all(inFlight);
      trafficDone = true;
    })();
    const malformed = throwMalformed(stack, peer, options, report, () => trafficDone);

    for (const [k, disruption] of options.disruptions.entries()) {
      rate = paceFor(disruption);
      await sleep(options.gapMs);
      const what = describeDisruption(disruption);
      options.log(`at message ${posted}: ${what} (posting at ${rate.toFixed(1)}/s)`);
      const began = Date.now();
      await disrupt(stack, disruption, killed);
      report.disruptions.push({ what, atMessage: posted, seconds: Math.round((Date.now() - began) / 100) / 10 });
      completed = k + 1;
    }
    rate = paceFor(undefined);
    await traffic;
    await malformed;
    options.log(`traffic done: ${accepted.length} accepted, ${report.notTaken} not taken; waiting for quiescence`);

    const keys = new Keyspace(stack.prefix, PARTITIONS);
    report.settled = await quiescence(
      async () => {
        const { rows } = await stack.sql.query<{ n: string }>(
          `SELECT (SELECT count(*) FROM event_log) + (SELECT count(*) FROM messages) + (SELECT count(*) FROM sends) AS n`,
        );
        // Not settled while the runtime has work left: a reader in backoff after an outage is quiet, not done.
        const backlog = backlogTotal(await readBacklog(stack.redis, keys));
        return `${rows[0]?.n} ${peer.deliveries.length} ${llm.calls.length} ${backlog === 0 ? 'idle' : `${backlog} ${Date.now()}`}`;
      },
      options.quietMs,
      options.settleTimeoutMs,
    );
    report.unexpectedExits = stack
      .alive()
      .filter((m) => !m.alive)
      .map((m) => m.name);

    const figures = await readFigures(stack, peer, accepted);
    report.unansweredWhy = await explainUnanswered(stack, figures.unansweredMessageIds);
    report.duplicateWhy = await explainDuplicates(stack, figures.duplicateKeys);
    report.llmCalls = llm.calls.length;
    report.deliveries = peer.deliveries.length;
    report.backlog = await readBacklog(stack.redis, keys);
    for (let p = 0; p < PARTITIONS; p++) report.poison.deadLetters += await stack.redis.xlen(keys.deadLetters(p));
    await poster.close();
    return { ...figures, ...report };
  } catch (error) {
    options.log(`chaos run failed: ${(error as Error).stack ?? String(error)}\n${stack.tails(15)}`);
    throw error;
  } finally {
    await stack.stop();
    await llm.close();
    await peer.stop();
  }
}

async function disrupt(stack: HarnessStack, disruption: Disruption, killed: Set<string>): Promise<void> {
  switch (disruption.kind) {
    case 'crash': {
      const app = disruption.target === 'projector' ? PROJECTOR_HOST : disruption.target;
      killed.add(app);
      await stack.crash(app, 1000);
      return;
    }
    case 'freeze':
      await stack.freeze(disruption.target, disruption.ms);
      return;
    case 'redis-restart':
      await stack.redisServer!.restart({ crash: disruption.crash, downMs: 1000 });
      return;
    case 'postgres-outage':
      stack.postgresProxy!.cut();
      try {
        await sleep(disruption.ms);
      } finally {
        stack.postgresProxy!.restore();
      }
      return;
  }
}

/**
 * A message no read model can hold (a NUL character: Postgres text and jsonb refuse it) posted like any other,
 * and two stream entries no consumer can decode, XADDed straight into the first group's partition. They must be
 * dead-lettered or refused without holding up anything else.
 */
async function injectPoison(
  stack: HarnessStack,
  poster: OneBotPoster,
  groupId: string,
  report: Omit<ChaosReport, keyof ChaosFigures>,
): Promise<void> {
  const answer = await poster.post(
    groupMessage({
      selfId: SELF_ID,
      groupId,
      messageId: 1_499_999_999,
      time: Math.floor(Date.now() / 1000),
      sender: { userId: '39999', nickname: '投毒者' },
      segments: [seg.at(SELF_ID), seg.text(' 毒\u0000药 #poison')],
    }),
  );
  report.poison.ingressAnswer = `${answer.status} ${answer.body.slice(0, 120)}`;
  const keys = new Keyspace(stack.prefix, PARTITIONS);
  const stream = keys.stream(keys.partitionOf(groupId));
  await stack.redis.xadd(stream, '*', 'k', 'message.observed', 'e', '{"id":"poison-1",');
  await stack.redis.xadd(
    stream,
    '*',
    'k',
    'message.direct',
    'e',
    JSON.stringify({
      id: 'poison-2',
      kind: 'message.direct',
      groupId,
      payload: { messageId: 42 },
      createdAt: 'yesterday',
    }),
  );
  report.poison.injectedEntries = 2;
}

/** Malformed payloads at a steady rate, alternating HTTP POST and a reverse WebSocket, until the traffic ends. */
async function throwMalformed(
  stack: HarnessStack,
  peer: OneBotPeer,
  options: ChaosOptions,
  report: Omit<ChaosReport, keyof ChaosFigures>,
  done: () => boolean,
): Promise<void> {
  if (options.malformedPerSecond <= 0) return;
  let messageId = 1_900_000_000;
  const context: PayloadContext = { fixtures: loadEventFixtures(), selfId: SELF_ID, nextMessageId: () => ++messageId };
  const poster = new OneBotPoster(stack.url('ingress'), {
    selfId: SELF_ID,
    accessToken: TOKEN,
    secret: SECRET,
    connections: 2,
  });
  const wsUrl = `${stack.url('ingress').replace(/^http/, 'ws')}/onebot/v11/ws`;
  let socket: WebSocket | undefined;
  let seed = options.seed * 7919;
  while (!done()) {
    const batch = samplePayloads(context, options.malformedPerSecond, seed++).filter(
      (p) => p.family !== 'valid' && p.family !== 'oversize',
    );
    for (const [i, payload] of batch.entries()) {
      if (done()) break;
      report.malformed.sent += 1;
      if (i % 2 === 0) {
        const answer = await poster.postRaw(payload.body);
        const kind = classifyAnswer(answer.status, answer.body);
        if (kind === 'accepted') report.malformed.accepted += 1;
        else if (kind === 'rejected') report.malformed.rejected += 1;
        else if (kind !== 'no-answer' && kind !== 'unavailable') report.malformed.unanswered += 1;
      } else {
        try {
          if (!socket || socket.readyState !== socket.OPEN) socket = await peer.connectReverse(wsUrl);
          socket.send(payload.body);
        } catch {
          socket = undefined; // ingress is down or restarting; the next frame reconnects
        }
      }
      await sleep(1000 / options.malformedPerSecond);
    }
  }
  socket?.terminate();
  await poster.close();
}

async function readFigures(stack: HarnessStack, peer: OneBotPeer, accepted: TrafficItem[]): Promise<ChaosFigures> {
  const messages = await stack.sql.query<{ id: string }>(
    `SELECT message_id AS id FROM messages WHERE from_self = false`,
  );
  const logged = await stack.sql.query<{ id: string }>(
    `SELECT envelope->'payload'->>'messageId' AS id FROM event_log WHERE kind IN ('message.observed', 'message.direct')`,
  );
  const planned = await stack.sql.query<{ group_id: string; text: string }>(
    `SELECT envelope->'payload'->>'targetId' AS group_id, envelope->'payload'->>'text' AS text
       FROM event_log WHERE kind = 'action.send' AND envelope->'payload'->>'targetType' = 'group' ORDER BY seq`,
  );
  return chaosFigures({
    accepted,
    inMessages: new Set(messages.rows.map((r) => r.id)),
    inEventLog: new Set(logged.rows.map((r) => r.id)),
    planned: planned.rows.map((r) => ({ groupId: r.group_id, text: r.text })),
    deliveries: peer.deliveries
      .filter((d) => d.messageType === 'group')
      .map((d) => ({ seq: d.seq, groupId: d.targetId, text: d.text })),
  });
}

/** For each unanswered @: where its chain stopped (event state, episode state and outcome, send states). */
async function explainUnanswered(stack: HarnessStack, messageIds: string[]): Promise<Record<string, number>> {
  if (messageIds.length === 0) return {};
  const { rows } = await stack.sql.query<{ why: string; n: string }>(
    `SELECT concat_ws(' / ',
              'event ' || coalesce(e.state, 'none'),
              'episode ' || coalesce(ep.state || ':' || coalesce(ep.outcome, '') || coalesce(':' || ep.error_code, ''), 'none'),
              'sends ' || coalesce((SELECT string_agg(DISTINCT s.state || coalesce(':' || s.error_code, ''), ',')
                                      FROM sends s WHERE s.episode_id = ep.id OR s.trigger_event_id = m.event_id), 'none'),
              CASE WHEN ep.trigger_event_id IS DISTINCT FROM m.event_id AND ep.id IS NOT NULL THEN 'answered in another trigger''s episode' END) AS why,
            count(*) AS n
       FROM messages m
       LEFT JOIN events e ON e.id = m.event_id
       LEFT JOIN episodes ep ON ep.id = coalesce(e.episode_id, (SELECT x.id FROM episodes x WHERE x.trigger_event_id = m.event_id LIMIT 1))
      WHERE m.message_id = ANY($1) AND m.from_self = false
      GROUP BY 1 ORDER BY 2 DESC`,
    [messageIds],
  );
  return Object.fromEntries(rows.map((r) => [r.why, Number(r.n)]));
}

/** For each part delivered twice: the send actions whose text carries it (one action sent twice, or two actions). */
async function explainDuplicates(
  stack: HarnessStack,
  keys: { groupId: string; token: string; part: number }[],
): Promise<Record<string, number>> {
  const why: Record<string, number> = {};
  for (const k of keys.slice(0, 50)) {
    const { rows } = await stack.sql.query<{ actions: string; states: string; episodes: string; outcomes: string }>(
      `SELECT count(DISTINCT s.action_id) AS actions, count(DISTINCT s.episode_id) AS episodes,
              string_agg(DISTINCT s.state, ',') AS states,
              string_agg(DISTINCT coalesce(e.outcome, e.state, '?') || CASE WHEN s.episode_id LIKE '%-a_' THEN ' (retry)' ELSE '' END, ',') AS outcomes
         FROM sends s LEFT JOIN episodes e ON e.id = s.episode_id
        WHERE s.group_id = $1 AND position($2 IN s.text) > 0`,
      [k.groupId, `回${k.token}·${k.part} `],
    );
    const r = rows[0];
    const label =
      `actions ${r?.actions ?? 0} / episodes ${r?.episodes ?? 0} / states ${r?.states ?? 'none'}` +
      ` / episode outcomes ${r?.outcomes ?? 'none'}`;
    why[label] = (why[label] ?? 0) + 1;
  }
  return why;
}
