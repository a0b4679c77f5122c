/**
 * Where the hot log may be cut. Redis is the hot log and Postgres `event_log` the durable one, so an entry may go
 * only when (a) the projector has archived it, (b) every consumer group has been handed it and has acknowledged
 * it, and (c) it is older than the retention window readers rely on (a panel tailing the stream, a consumer
 * re-reading after a short outage).
 */

/** Redis stream entry id `ms-seq`. */
export type StreamId = string;

export interface GroupPosition {
  group: string;
  /** XINFO GROUPS `last-delivered-id`: everything after it has not been handed to the group yet. */
  lastDeliveredId: StreamId;
  /** The oldest entry the group holds unacknowledged (XPENDING summary), or null when none is pending. */
  oldestPendingId: StreamId | null;
}

export interface TrimInput {
  /** The projector checkpoint's `last_entry_id` for this partition; null when nothing was archived yet. */
  archivedThrough: StreamId | null;
  groups: readonly GroupPosition[];
  nowMs: number;
  retentionMs: number;
}

const STREAM_ID = /^(\d+)-(\d+)$/;

function parse(id: StreamId): [bigint, bigint] {
  const match = STREAM_ID.exec(id);
  if (!match) throw new RangeError(`not a stream id: ${JSON.stringify(id)}`);
  return [BigInt(match[1]!), BigInt(match[2]!)];
}

/** Order of two stream ids: negative, zero or positive. */
export function compareStreamIds(a: StreamId, b: StreamId): number {
  const [am, as] = parse(a);
  const [bm, bs] = parse(b);
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

function oldest(ids: readonly StreamId[]): StreamId {
  return ids.reduce((min, id) => (compareStreamIds(id, min) < 0 ? id : min));
}

/**
 * The id to pass to `XTRIM key MINID ~ <id>` (which removes entries older than it), or null when nothing may be
 * trimmed. The minimum of the archive checkpoint, every group's last-delivered and oldest pending id, and the
 * retention bound.
 */
export function trimPoint(input: TrimInput): StreamId | null {
  if (input.archivedThrough === null) return null;
  const candidates: StreamId[] = [
    input.archivedThrough,
    `${Math.max(0, Math.floor(input.nowMs - input.retentionMs))}-0`,
  ];
  for (const group of input.groups) {
    candidates.push(group.lastDeliveredId);
    if (group.oldestPendingId !== null) candidates.push(group.oldestPendingId);
  }
  const point = oldest(candidates);
  return compareStreamIds(point, '0-0') === 0 ? null : point;
}
