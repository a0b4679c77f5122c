import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { Keyspace } from '@app/contracts';
import { classifyAnswer, type AnswerClass } from '../harness/ingress-answer.rules.js';
import { readIngressOutcomes, settled, type IngressOutcomes } from '../harness/ingress-metrics.js';
import { OneBotPeer } from '../harness/onebot-peer.js';
import {
  loadEventFixtures,
  samplePayloads,
  type FuzzPayload,
  type PayloadContext,
} from '../harness/onebot-payloads.js';
import { OneBotPoster } from '../harness/onebot-poster.js';
import { HarnessStack } from '../harness/stack.js';
import { rssMb, until } from '../harness/wait.js';

export type FuzzTransport = 'http' | 'ws_reverse' | 'ws_forward';
export const FUZZ_TRANSPORTS: FuzzTransport[] = ['http', 'ws_reverse', 'ws_forward'];

export interface FuzzOptions {
  payloads: number;
  seed: number;
  transports: FuzzTransport[];
  /** HTTP requests in flight at once. */
  concurrency: number;
  /** WebSocket frames sent before waiting for ingress to have settled them. */
  wsBatch: number;
  log: (line: string) => void;
}

export interface TransportFigures {
  payloads: number;
  accepted: number;
  rejected: number;
  /** Neither an acceptance nor a structured rejection: a 500, an unstructured 4xx, a frame never settled. */
  unanswered: number;
  /** Answered 503 "retry later" (the event log did not take it): not a crash, not an answer to the payload. */
  unavailable: number;
  /** WebSocket only: error frames ingress sent back for refused frames. */
  errorFrames?: number;
  /** WebSocket only: times ingress closed the connection (oversized frames, back-pressure). */
  closes?: number;
  seconds?: number;
}

export interface FuzzReport {
  payloads: number;
  accepted: number;
  rejected: number;
  crashes: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  rssPeakMb: number;
  unanswered: number;
  /** Events ingress counted as appended vs entries really in the streams. */
  appendedCounted: number;
  appendedInStreams: number;
  byTransport: Partial<Record<FuzzTransport, TransportFigures>>;
  /** HTTP answers (and lone WebSocket frames) by payload family: what each kind of damage got. */
  byFamily: Record<string, Partial<Record<AnswerClass, number>>>;
  /** Up to 10 payloads answered outside the contract, for a person to replay. */
  examples: { transport: FuzzTransport; family: string; fixture?: string; answer: string; body: string }[];
  seed: number;
}

const SELF_ID = '10001';
const TOKEN = 'fuzz-token';
const SECRET = 'fuzz-secret';
const PARTITIONS = 4;
const BATCH = 2000;

/**
 * Throws ≥100k generated and mutated OneBot payloads at a real ingress process over every transport it has —
 * HTTP POST, reverse WebSocket (we connect to it), forward WebSocket (it connects to our OneBot double) — and
 * checks each one is answered: HTTP with 2xx or a structured 4xx; a WebSocket frame by being settled in ingress's
 * outcome counters (WebSocket events have no per-frame reply in OneBot v11) or by an error frame. A crash is the
 * process exiting; memory is the process's RSS after warm-up and at the end.
 */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const peer = new OneBotPeer({ selfId: SELF_ID, accessToken: TOKEN });
  await peer.start();
  const stack = new HarnessStack({
    label: 'fuzz',
    apps: ['ingress'],
    ownRedis: true,
    env: {
      QUNLI_SELF_ID: SELF_ID,
      ONEBOT_ACCESS_TOKEN: TOKEN,
      ONEBOT_SECRET: SECRET,
      QUNLI_PARTITIONS: String(PARTITIONS),
      QUNLI_LOG_LEVEL: 'error',
      ...(options.transports.includes('ws_forward') && { ONEBOT_WS_URL: peer.wsUrl }),
    },
  });
  const report: FuzzReport = {
    payloads: 0,
    accepted: 0,
    rejected: 0,
    crashes: 0,
    rssBeforeMb: Number.NaN,
    rssAfterMb: Number.NaN,
    rssPeakMb: 0,
    unanswered: 0,
    appendedCounted: 0,
    appendedInStreams: 0,
    byTransport: {},
    byFamily: {},
    examples: [],
    seed: options.seed,
  };
  let messageId = 1_000_000_000;
  const context: PayloadContext = { fixtures: loadEventFixtures(), selfId: SELF_ID, nextMessageId: () => ++messageId };
  const ingress = () => stack.member('ingress');

  const checkAlive = async (): Promise<void> => {
    const rss = await rssMb(ingress().process.pid);
    if (Number.isFinite(rss)) report.rssPeakMb = Math.max(report.rssPeakMb, rss);
    if (stack.alive().every((m) => m.alive)) return;
    report.crashes += 1;
    options.log(`ingress died:\n${ingress().process.tail(30)}`);
    await ingress().process.start(90_000);
  };
  const tally = (transport: FuzzTransport, payload: FuzzPayload, answer: AnswerClass, detail: string) => {
    const family = (report.byFamily[payload.family] ??= {});
    family[answer] = (family[answer] ?? 0) + 1;
    const seen = report.examples.some((e) => e.family === payload.family && e.answer === detail);
    if ((answer === 'unstructured' || answer === 'no-answer') && !seen && report.examples.length < 10) {
      report.examples.push({
        transport,
        family: payload.family,
        fixture: payload.fixture,
        answer: detail,
        body: payload.body.slice(0, 300),
      });
    }
  };

  try {
    await stack.start();
    if (options.transports.includes('ws_forward')) {
      await until(
        'ingress to connect its forward WebSocket',
        async () => (peer.forwardConnections > 0 ? true : undefined),
        30_000,
      );
    }
    const perTransport = Math.ceil(options.payloads / options.transports.length);
    let seed = options.seed;
    for (const transport of options.transports) {
      const figures: TransportFigures = { payloads: 0, accepted: 0, rejected: 0, unanswered: 0, unavailable: 0 };
      report.byTransport[transport] = figures;
      const transportStarted = Date.now();
      for (let done = 0; done < perTransport; done += BATCH) {
        const batch = samplePayloads(context, Math.min(BATCH, perTransport - done), seed++, {
          credentials: transport === 'http',
        });
        if (transport === 'http') await fuzzHttp(stack, batch, options, figures, tally);
        else await fuzzWebSocket(transport, stack, peer, batch, options, figures, tally);
        await checkAlive();
        if (Number.isNaN(report.rssBeforeMb) && report.payloads + figures.payloads >= 1000) {
          report.rssBeforeMb = await rssMb(ingress().process.pid);
        }
        options.log(
          `${transport}: ${done + batch.length}/${perTransport} accepted ${figures.accepted} rejected ${figures.rejected} unanswered ${figures.unanswered} rss ${await rssMb(ingress().process.pid)} MB`,
        );
      }
      figures.seconds = Math.round((Date.now() - transportStarted) / 1000);
      report.payloads += figures.payloads;
      report.accepted += figures.accepted;
      report.rejected += figures.rejected;
      report.unanswered += figures.unanswered;
    }
    await sleep(3000);
    await checkAlive();
    report.rssAfterMb = await rssMb(ingress().process.pid);
    const outcomes = await readIngressOutcomes(stack.url('ingress'));
    report.appendedCounted = outcomes.accepted;
    const keys = new Keyspace(stack.prefix, PARTITIONS);
    for (let p = 0; p < PARTITIONS; p++) report.appendedInStreams += await stack.redis.xlen(keys.stream(p));
  } finally {
    await stack.stop();
    await peer.stop();
  }
  return report;
}

type Tally = (transport: FuzzTransport, payload: FuzzPayload, answer: AnswerClass, detail: string) => void;

async function fuzzHttp(
  stack: HarnessStack,
  batch: FuzzPayload[],
  options: FuzzOptions,
  figures: TransportFigures,
  tally: Tally,
): Promise<void> {
  const poster = new OneBotPoster(stack.url('ingress'), {
    selfId: SELF_ID,
    accessToken: TOKEN,
    secret: SECRET,
    connections: options.concurrency,
  });
  let next = 0;
  const worker = async () => {
    while (next < batch.length) {
      const payload = batch[next++]!;
      const answer =
        payload.badCredentials === 'token'
          ? await poster.postRaw(payload.body, {
              credentials: false,
              headers: { authorization: 'Bearer wrong-token' },
            })
          : payload.badCredentials === 'signature'
            ? await poster.postRaw(payload.body, {
                credentials: false,
                headers: {
                  authorization: `Bearer ${TOKEN}`,
                  'x-signature': 'sha1=0000000000000000000000000000000000000000',
                },
              })
            : await poster.postRaw(payload.body);
      const kind = classifyAnswer(answer.status, answer.body);
      figures.payloads += 1;
      if (kind === 'accepted') figures.accepted += 1;
      else if (kind === 'rejected') figures.rejected += 1;
      else if (kind === 'unavailable') figures.unavailable += 1;
      else figures.unanswered += 1;
      tally('http', payload, kind, `${answer.status} ${answer.error ?? answer.body.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  await poster.close();
}

/**
 * Send frames in batches and wait until ingress's counters say it settled as many inputs as were sent; a frame
 * ingress cannot parse counts as `rejected` (bad_json), so every frame lands in exactly one counter.
 */
async function fuzzWebSocket(
  transport: 'ws_reverse' | 'ws_forward',
  stack: HarnessStack,
  peer: OneBotPeer,
  batch: FuzzPayload[],
  options: FuzzOptions,
  figures: TransportFigures,
  tally: Tally,
): Promise<void> {
  const ingressUrl = stack.url('ingress');
  const wsUrl = `${ingressUrl.replace(/^http/, 'ws')}/onebot/v11/ws`;
  let socket: WebSocket | undefined;
  let closes = figures.closes ?? 0;
  const errorFramesBefore = peer.eventReplies.length;
  const open = async (): Promise<void> => {
    if (transport === 'ws_reverse') {
      if (socket && socket.readyState === WebSocket.OPEN) return;
      socket = await peer.connectReverse(wsUrl);
      socket.once('close', () => (closes += 1));
    } else {
      if (peer.forwardConnections === 0) closes += 1;
      await until(
        'ingress to (re)connect its forward WebSocket',
        async () => (peer.forwardConnections > 0 ? true : undefined),
        60_000,
      );
    }
  };
  const send = (frame: string): boolean => {
    if (transport === 'ws_reverse') {
      if (!socket || socket.readyState !== WebSocket.OPEN) return false;
      socket.send(frame);
      return true;
    }
    return peer.pushForward(frame);
  };

  const groups: FuzzPayload[][] = [];
  let current: FuzzPayload[] = [];
  for (const payload of batch) {
    // An oversized frame makes ingress close the connection; send it alone so no other frame is caught in that.
    if (payload.family === 'oversize') {
      if (current.length > 0) groups.push(current);
      groups.push([payload]);
      current = [];
    } else {
      current.push(payload);
      if (current.length >= options.wsBatch) {
        groups.push(current);
        current = [];
      }
    }
  }
  if (current.length > 0) groups.push(current);

  for (const group of groups) {
    await open();
    const before: IngressOutcomes = await readIngressOutcomes(ingressUrl);
    let sent = 0;
    for (const payload of group) {
      if (send(payload.body)) sent += 1;
      if (transport === 'ws_reverse' && socket && socket.bufferedAmount > 4_000_000) await sleep(10);
    }
    let after = before;
    const target = settled(before) + sent;
    // Until every frame is settled, or nothing moved for two seconds (a frame ingress dropped without a word).
    let progressAt = Date.now();
    while (settled(after) < target && Date.now() - progressAt < 2000) {
      await sleep(20);
      const now = await readIngressOutcomes(ingressUrl);
      if (settled(now) > settled(after)) progressAt = Date.now();
      after = now;
    }
    const accepted =
      after.accepted + after.ignored + after.duplicates - (before.accepted + before.ignored + before.duplicates);
    const rejected = after.rejected - before.rejected;
    const unavailable = after.unavailable - before.unavailable;
    figures.payloads += group.length;
    figures.accepted += accepted;
    figures.rejected += rejected;
    figures.unavailable += unavailable;
    figures.unanswered += Math.max(0, group.length - accepted - rejected - unavailable);
    if (group.length === 1) {
      const kind: AnswerClass = accepted === 1 ? 'accepted' : rejected === 1 ? 'rejected' : 'no-answer';
      tally(transport, group[0]!, kind, `settled as ${kind}`);
    }
  }
  figures.closes = closes;
  figures.errorFrames = (figures.errorFrames ?? 0) + peer.eventReplies.length - errorFramesBefore;
}
