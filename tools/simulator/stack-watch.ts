import pg from 'pg';
import { EventKind, Keyspace } from '@app/contracts';
import { createRedis, isRedisCluster } from '@app/platform';
import type { DecisionNote, FeedEntry, ThinkingStatus } from './simulator.js';

/** Lines of the transcript read back from the log at start. */
const TRANSCRIPT_LINES = 500;

interface MessageRow {
  group_id: string | null;
  message_id: string | null;
  user_id: string | null;
  display_name: string | null;
  text: string | null;
  from_self: boolean | null;
  sent_at: Date | null;
  recalled_at: Date | null;
  outcome?: string | null;
  decision_reason?: string | null;
}

/** The conversation key the page uses: `g:<group>` or `p:<user>`, from an event's `groupId`. */
export function conversationKey(groupId: string): string {
  return groupId.startsWith('private:') ? `p:${groupId.slice('private:'.length)}` : `g:${groupId}`;
}

/**
 * The transcript so far, from the stack's `messages` read model (the log, projected): what people said and what
 * the bot said, oldest first. A person who restarts the stack finds the conversation where it was.
 */
export async function loadTranscript(databaseUrl: string, selfId: string): Promise<FeedEntry[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const { rows } = await client.query<MessageRow>(
      `SELECT m.group_id, m.message_id, m.user_id, m.display_name, m.text, m.from_self, m.sent_at, m.recalled_at,
              e.outcome, e.reason AS decision_reason
         FROM messages m LEFT JOIN events e ON e.id = m.event_id
        WHERE m.text IS NOT NULL ORDER BY m.sent_at DESC NULLS LAST LIMIT $1`,
      [TRANSCRIPT_LINES],
    );
    return rows.reverse().map((row, i): FeedEntry => {
      const conversation = row.group_id ?? '';
      const isPrivate = conversation.startsWith('private:');
      const bot = row.from_self === true;
      return {
        seq: i,
        kind: bot ? 'bot' : 'user',
        at: (row.sent_at ?? new Date()).toISOString(),
        text: row.text ?? '',
        ...(isPrivate ? { userId: conversation.slice('private:'.length) } : { groupId: conversation }),
        ...(!bot && !isPrivate && row.user_id !== null && { userId: row.user_id }),
        ...(!bot && row.display_name !== null && { nickname: row.display_name }),
        ...(bot && { userId: isPrivate ? conversation.slice('private:'.length) : selfId }),
        ...(row.message_id !== null && { messageId: row.message_id }),
        ...(row.recalled_at !== null && { recalled: true }),
        ...(!bot &&
          row.outcome != null &&
          row.decision_reason != null && { decision: { outcome: row.outcome, reason: row.decision_reason } }),
      };
    });
  } finally {
    await client.end();
  }
}

/** How often the watch polls each stream on a Redis Cluster. */
const CLUSTER_POLL_MS = 250;

type StreamReply = [stream: string, entries: [id: string, fields: string[]][]][];

/**
 * Follows the stack's event streams for `episode.started` / `episode.completed` and reports, per conversation,
 * whether the bot is thinking (an episode runs there). Returns the function that stops following.
 */
export function watchThinking(
  redisUrl: string,
  keys: Keyspace,
  onChange: (status: ThinkingStatus) => void,
): () => Promise<void> {
  // `createRedis` reads REDIS_URL as the apps do: a Unix socket or a cluster's seeds too.
  const redis = createRedis(redisUrl, 'qunli-simulator-watch', { enableAutoPipelining: false });
  redis.on('error', () => undefined);
  const cluster = isRedisCluster(redisUrl);
  const running = new Map<string, Set<string>>();
  let stopped = false;
  const ids = Array.from({ length: keys.partitions }, () => '$');
  const streams = Array.from({ length: keys.partitions }, (_, p) => keys.stream(p));

  /** What was appended since the last read: one blocking read of every stream, or on a cluster one poll each. */
  const read = async (): Promise<StreamReply> => {
    if (!cluster) return (await redis.xread('COUNT', 200, 'BLOCK', 1000, 'STREAMS', ...streams, ...ids)) ?? [];
    // A cluster refuses one read of streams in different slots, and a blocking read would hold its node's connection
    // for the other partitions' reads: each stream is polled on its own, from its last entry when the watch began.
    await Promise.all(
      ids.map(async (id, p) => {
        if (id === '$') ids[p] = (await redis.xrevrange(streams[p]!, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
      }),
    );
    const replies = await Promise.all(
      streams.map((stream, p) => redis.xread('COUNT', 200, 'STREAMS', stream, ids[p]!)),
    );
    const reply = replies.flatMap((r) => r ?? []);
    if (reply.length === 0 && !stopped) await new Promise((resolve) => setTimeout(resolve, CLUSTER_POLL_MS));
    return reply;
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        for (const [stream, entries] of await read()) {
          const p = streams.indexOf(stream);
          for (const [id, fields] of entries) {
            ids[p] = id;
            const kind = fields[1];
            if (kind !== EventKind.EpisodeStarted && kind !== EventKind.EpisodeCompleted) continue;
            const envelope = JSON.parse(fields[fields.indexOf('e') + 1] ?? '{}') as {
              groupId?: string | null;
              payload?: { episodeId?: string };
            };
            if (!envelope.groupId || !envelope.payload?.episodeId) continue;
            const key = conversationKey(envelope.groupId);
            const set = running.get(key) ?? new Set<string>();
            if (kind === EventKind.EpisodeStarted) set.add(envelope.payload.episodeId);
            else set.delete(envelope.payload.episodeId);
            running.set(key, set);
            onChange({ conversation: key, thinking: set.size > 0 });
          }
        }
      } catch {
        if (!stopped) await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  })();

  return async () => {
    stopped = true;
    redis.disconnect();
    await loop;
  };
}

interface DecisionRow {
  seq: string;
  group_id: string | null;
  message_id: string | null;
  outcome: string | null;
  reason: string | null;
}

/** How often the decision watch looks for new decisions (ms). */
const DECISION_POLL_MS = 1000;

/**
 * Follows the scheduler's decisions as the projector archives them (`event_log`, `decision.made`, joined to the
 * `messages` read model) and reports each one for the message it is about, so the page shows "skipped: 0.31 <
 * 0.55 (…)" under it. Starts after what is already archived (the transcript carries those). Returns the stop.
 */
export function watchDecisions(databaseUrl: string, onDecision: (note: DecisionNote) => void): () => Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000 });
  let stopped = false;
  let cursor: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const connected = client.connect().catch(() => undefined);

  const poll = async (): Promise<void> => {
    try {
      await connected;
      if (cursor === undefined) {
        const { rows } = await client.query<{ seq: string | null }>(`SELECT max(seq)::text AS seq FROM event_log`);
        cursor = rows[0]?.seq ?? '0';
      }
      const { rows } = await client.query<DecisionRow>(
        `SELECT l.seq::text AS seq, m.group_id, m.message_id,
                l.envelope->'payload'->>'outcome' AS outcome, l.envelope->'payload'->>'reason' AS reason
           FROM event_log l JOIN messages m ON m.event_id = l.envelope->'payload'->>'subjectEventId'
          WHERE l.seq > $1::bigint AND l.kind = 'decision.made'
          ORDER BY l.seq LIMIT 500`,
        [cursor],
      );
      for (const row of rows) {
        cursor = row.seq;
        if (row.group_id === null || row.message_id === null || row.outcome === null || row.reason === null) continue;
        onDecision({
          conversation: conversationKey(row.group_id),
          messageId: row.message_id,
          decision: { outcome: row.outcome, reason: row.reason },
        });
      }
    } catch {
      // The stack may be starting or restarting; the next poll tries again.
    }
    if (!stopped) timer = setTimeout(() => void poll(), DECISION_POLL_MS);
  };
  void poll();

  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await client.end().catch(() => undefined);
  };
}
