import { replyParts, type TrafficItem } from './chaos.traffic.js';

/** A message the OneBot double delivered to a group, in arrival order. */
export interface DeliveredText {
  seq: number;
  groupId: string;
  text: string;
}

/** An `action.send` of the event log, in log order. */
export interface PlannedSend {
  groupId: string;
  text: string;
}

export interface ChaosEvidence {
  /** Messages ingress answered 2xx for. */
  accepted: TrafficItem[];
  /** Upstream message ids in Postgres: the `messages` read model and the archived `event_log`. */
  inMessages: ReadonlySet<string>;
  inEventLog: ReadonlySet<string>;
  deliveries: DeliveredText[];
  planned: PlannedSend[];
}

export interface ChaosFigures {
  accepted: number;
  /** Accepted messages present both in `event_log` and in `messages`. */
  archived: number;
  lost: number;
  /** Deliveries of a reply part that had already been delivered (same group, token and part). */
  duplicateSends: number;
  /** Parts delivered before a part that precedes them in the group's log order (first deliveries only). */
  orderViolations: number;
  /** Accepted @-mentions whose token no delivered part in their group carries. */
  unanswered: number;
  /** Reply parts the log asked for that never arrived (a failed or unknown send, or one still pending). */
  undeliveredParts: number;
  deliveredParts: number;
  plannedParts: number;
  /** Upstream ids of the unanswered @-mentions, for the run to explain. */
  unansweredMessageIds: string[];
  /** The (group, token, part) keys delivered more than once, for the run to explain. */
  duplicateKeys: { groupId: string; token: string; part: number }[];
}

const key = (groupId: string, token: string, part: number) => `${groupId} ${token} ${part}`;

/** The chaos figures from what was accepted, what Postgres holds, what the log planned and what QQ received. */
export function chaosFigures(evidence: ChaosEvidence): ChaosFigures {
  const accepted = evidence.accepted.length;
  const archived = evidence.accepted.filter(
    (m) => evidence.inMessages.has(String(m.messageId)) && evidence.inEventLog.has(String(m.messageId)),
  ).length;

  // Expected position of every part in its group: the log's action order, then part order within the action.
  const position = new Map<string, number>();
  const perGroup = new Map<string, number>();
  for (const send of evidence.planned) {
    for (const { token, part } of replyParts(send.text)) {
      const k = key(send.groupId, token, part);
      if (position.has(k)) continue;
      const next = perGroup.get(send.groupId) ?? 0;
      position.set(k, next);
      perGroup.set(send.groupId, next + 1);
    }
  }

  const seen = new Set<string>();
  const answeredTokens = new Set<string>();
  const highest = new Map<string, number>();
  let duplicateSends = 0;
  const duplicateKeys: ChaosFigures['duplicateKeys'] = [];
  let orderViolations = 0;
  let deliveredParts = 0;
  for (const delivery of [...evidence.deliveries].sort((a, b) => a.seq - b.seq)) {
    for (const { token, part } of replyParts(delivery.text)) {
      const k = key(delivery.groupId, token, part);
      answeredTokens.add(`${delivery.groupId} ${token}`);
      if (seen.has(k)) {
        duplicateSends += 1;
        duplicateKeys.push({ groupId: delivery.groupId, token, part });
        continue;
      }
      seen.add(k);
      deliveredParts += 1;
      const expected = position.get(k);
      if (expected === undefined) continue;
      const max = highest.get(delivery.groupId) ?? -1;
      if (expected < max) orderViolations += 1;
      else highest.set(delivery.groupId, expected);
    }
  }
  const unansweredItems = evidence.accepted.filter((m) => m.mention && !answeredTokens.has(`${m.groupId} ${m.token}`));
  const undeliveredParts = [...position.keys()].filter((k) => !seen.has(k)).length;
  return {
    accepted,
    archived,
    lost: accepted - archived,
    duplicateSends,
    orderViolations,
    unanswered: unansweredItems.length,
    undeliveredParts,
    deliveredParts,
    plannedParts: position.size,
    unansweredMessageIds: unansweredItems.map((m) => String(m.messageId)),
    duplicateKeys,
  };
}
