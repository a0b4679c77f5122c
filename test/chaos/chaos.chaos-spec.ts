import { PAST_CLAIM_MS, runChaos, type ChaosReport, type Disruption } from '../../tools/chaos/chaos.run.js';

/**
 * The reduced chaos run of `npm test`: a few hundred messages across a handful of groups through the real apps
 * (ingress, scheduler with the projector, cognition, two outbound replicas) while each service is SIGKILLed once,
 * one outbound is frozen past its lease and claim time, the harness's own Redis restarts and Postgres goes away.
 * A poison message, poison stream entries and malformed payloads are thrown in. `npm run chaos` is the full size.
 */
const DISRUPTIONS: Disruption[] = [
  { kind: 'crash', target: 'ingress' },
  { kind: 'crash', target: 'scheduler' },
  { kind: 'crash', target: 'cognition' },
  { kind: 'crash', target: 'outbound' },
  { kind: 'crash', target: 'projector' },
  { kind: 'freeze', target: 'outbound', ms: PAST_CLAIM_MS },
  { kind: 'redis-restart', crash: false },
  { kind: 'postgres-outage', ms: 6000 },
];

describe('chaos (reduced): every service killed once, a freeze, a Redis restart, a Postgres outage', () => {
  let report: ChaosReport;

  beforeAll(async () => {
    report = await runChaos({
      messages: 300,
      groups: 8,
      mentionShare: 0.25,
      seed: 5,
      gapMs: 2000,
      disruptions: DISRUPTIONS,
      malformedPerSecond: 5,
      llmLatencyMs: 100,
      outboundReplicas: 2,
      cognitionReplicas: 1,
      quietMs: 8000,
      settleTimeoutMs: 240_000,
      log: (line) => process.stderr.write(`[chaos] ${line}\n`),
    });
    process.stderr.write(`[chaos] figures ${JSON.stringify({ ...report, unansweredMessageIds: undefined })}\n`);
  }, 600_000);

  it('ran every disruption while traffic flowed, and the runtime went idle afterwards', () => {
    expect(report.disruptions.map((d) => d.what)).toHaveLength(DISRUPTIONS.length);
    expect(report.settled).toBe(true);
    expect(report.backlog).toEqual({ unread: 0, pending: 0, jobs: 0 });
    expect(report.unexpectedExits).toEqual([]);
    expect(report.accepted).toBe(300);
  });

  it('loses no accepted message: each is in event_log and in the messages read model', () => {
    expect(report.lost).toBe(0);
    expect(report.archived).toBe(report.accepted);
  });

  it('delivers no reply part twice', () => {
    expect(report.duplicateSends).toBe(0);
  });

  it('keeps every group’s send order', () => {
    expect(report.orderViolations).toBe(0);
  });

  // An @ whose episode was running when cognition was killed is continued by another worker from its last
  // committed step; a part whose send was interrupted is verified against the peer's history before any resend.
  it('answers every @-mention', () => {
    expect(report.unansweredWhy).toEqual({});
    expect(report.unanswered).toBe(0);
  });

  it('dead-letters the poison stream entries and answers malformed payloads structurally', () => {
    // Two undecodable entries, dead-lettered by each consumer group that reads them (at least the scheduler's).
    expect(report.poison.deadLetters).toBeGreaterThanOrEqual(report.poison.injectedEntries);
    expect(report.malformed.sent).toBeGreaterThan(0);
  });
});
