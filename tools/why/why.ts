import type { DataSource } from 'typeorm';

/*
 * `npm run why`: what the scheduler decided about one message and why, from the Postgres projections (never from
 * Redis: the read models are what a person and the panel look at, and what replay rebuilds).
 */

export interface WhyDecision {
  at: string;
  outcome: string;
  reason: string;
  features: Record<string, number>;
  threadId?: string;
  keywordHits: { term: string; scope: string; weight: number }[];
  episodeId?: string;
}

export interface WhyReport {
  eventId: string;
  message?: {
    groupId: string | null;
    userId: string | null;
    displayName: string | null;
    text: string | null;
    sentAt: string | null;
  };
  state?: { state: string | null; outcome: string | null; reason: string | null };
  decisions: WhyDecision[];
  transitions: {
    seq: number;
    from: string | null;
    to: string | null;
    reason: string | null;
    at: string | null;
    by: string | null;
  }[];
  thread?: {
    threadId: string;
    status: string | null;
    messages: number | null;
    participants: string[];
    openQuestions: { senderId: string; text: string }[];
    botJoined: boolean | null;
  };
}

const iso = (value: unknown): string | null =>
  value instanceof Date ? value.toISOString() : typeof value === 'string' ? value : null;

/** Resolve a message id, an event id, or the id of an event about an event (a decision) to its subject event. */
async function subjectOf(db: DataSource, id: string): Promise<string | undefined> {
  const direct = await db.query<{ event_id: string }[]>(
    `SELECT event_id FROM messages WHERE event_id = $1 OR message_id = $1 ORDER BY sent_at DESC LIMIT 1`,
    [id],
  );
  if (direct[0]) return direct[0].event_id;
  const tracked = await db.query<{ id: string }[]>(`SELECT id FROM events WHERE id = $1`, [id]);
  if (tracked[0]) return tracked[0].id;
  const about = await db.query<{ subject: string | null }[]>(
    `SELECT envelope->'payload'->>'subjectEventId' AS subject FROM event_log WHERE id = $1`,
    [id],
  );
  return about[0]?.subject ?? undefined;
}

export async function whyOf(db: DataSource, id: string): Promise<WhyReport | undefined> {
  const eventId = await subjectOf(db, id);
  if (eventId === undefined) return undefined;
  const [messages, states, decisions, transitions] = await Promise.all([
    db.query<Record<string, unknown>[]>(
      `SELECT group_id, user_id, display_name, text, sent_at FROM messages WHERE event_id = $1`,
      [eventId],
    ),
    db.query<Record<string, unknown>[]>(`SELECT state, outcome, reason FROM events WHERE id = $1`, [eventId]),
    db.query<{ created_at: Date; payload: Record<string, unknown> }[]>(
      `SELECT created_at, envelope->'payload' AS payload FROM event_log
        WHERE kind = 'decision.made' AND envelope->'payload'->>'subjectEventId' = $1 ORDER BY seq`,
      [eventId],
    ),
    db.query<Record<string, unknown>[]>(
      `SELECT seq, from_state, to_state, reason, at, actor FROM event_transitions WHERE event_id = $1 ORDER BY seq`,
      [eventId],
    ),
  ]);
  const report: WhyReport = {
    eventId,
    decisions: decisions.map(({ created_at, payload: p }) => {
      const d: WhyDecision = {
        at: iso(created_at)!,
        outcome: String(p.outcome),
        reason: String(p.reason),
        features: (p.features ?? {}) as Record<string, number>,
        keywordHits: ((p.keywordHits ?? []) as WhyDecision['keywordHits']).map((h) => ({
          term: h.term,
          scope: h.scope,
          weight: h.weight,
        })),
      };
      if (typeof p.threadId === 'string') d.threadId = p.threadId;
      if (typeof p.episodeId === 'string') d.episodeId = p.episodeId;
      return d;
    }),
    transitions: transitions.map((t) => ({
      seq: Number(t.seq),
      from: (t.from_state as string | null) ?? null,
      to: (t.to_state as string | null) ?? null,
      reason: (t.reason as string | null) ?? null,
      at: iso(t.at),
      by: (t.actor as string | null) ?? null,
    })),
  };
  const m = messages[0];
  if (m) {
    report.message = {
      groupId: (m.group_id as string | null) ?? null,
      userId: (m.user_id as string | null) ?? null,
      displayName: (m.display_name as string | null) ?? null,
      text: (m.text as string | null) ?? null,
      sentAt: iso(m.sent_at),
    };
  }
  const s = states[0];
  if (s) {
    report.state = {
      state: (s.state as string | null) ?? null,
      outcome: (s.outcome as string | null) ?? null,
      reason: (s.reason as string | null) ?? null,
    };
  }
  const threadId = report.decisions.findLast((d) => d.threadId)?.threadId;
  if (threadId !== undefined) {
    const rows = await db.query<Record<string, unknown>[]>(
      `SELECT thread_id, status, messages, participants, open_questions, bot_joined FROM threads WHERE thread_id = $1`,
      [threadId],
    );
    const t = rows[0];
    if (t) {
      report.thread = {
        threadId,
        status: (t.status as string | null) ?? null,
        messages: t.messages === null ? null : Number(t.messages),
        participants: (t.participants as string[] | null) ?? [],
        openQuestions: ((t.open_questions as { senderId: string; text: string }[] | null) ?? []).map((q) => ({
          senderId: q.senderId,
          text: q.text,
        })),
        botJoined: (t.bot_joined as boolean | null) ?? null,
      };
    }
  }
  return report;
}

const FEATURE_ORDER = [
  'score',
  'high',
  'middle',
  'directness',
  'interest',
  'question',
  'continuity',
  'obligation',
  'keyword',
  'silence',
  'novelty',
  'recentlyReplied',
  'budgetSpent',
  'lowInformation',
];

function features(f: Record<string, number>): string {
  const named = FEATURE_ORDER.filter((k) => f[k] !== undefined && (f[k] !== 0 || k === 'score'));
  return named.map((k) => `${k} ${Number(f[k]).toFixed(2)}`).join(' · ') || '(none)';
}

/** The report as a person reads it. */
export function formatWhy(r: WhyReport): string {
  const lines: string[] = [];
  const m = r.message;
  lines.push(
    m
      ? `message ${r.eventId} in ${m.groupId ?? '?'} from ${m.displayName ?? m.userId ?? '?'} at ${m.sentAt ?? '?'}: ${m.text ?? ''}`
      : `event ${r.eventId}`,
  );
  if (r.state) lines.push(`now: ${r.state.state ?? '?'} — ${r.state.reason ?? ''}`);
  if (r.decisions.length === 0) lines.push('no decision recorded (yet)');
  r.decisions.forEach((d, i) => {
    const label = i === r.decisions.length - 1 ? 'decision' : 'earlier';
    lines.push(`${label} (${d.at}): ${d.reason}${d.episodeId ? `  → ${d.episodeId}` : ''}`);
    lines.push(`  features: ${features(d.features)}`);
    lines.push(
      `  keywords: ${d.keywordHits.length === 0 ? '(none)' : d.keywordHits.map((h) => `${h.term} [${h.scope} ${h.weight}]`).join(', ')}`,
    );
  });
  if (r.thread) {
    const t = r.thread;
    const open =
      t.openQuestions.length === 0 ? 'none' : t.openQuestions.map((q) => `${q.senderId}: ${q.text}`).join('; ');
    lines.push(
      `thread ${t.threadId} (${t.status ?? '?'}): ${t.messages ?? '?'} messages, ${t.participants.join(', ')}${t.botJoined ? '' : ' (bot not in it)'}; open questions: ${open}`,
    );
  }
  lines.push('transitions:');
  for (const t of r.transitions) {
    lines.push(`  ${t.seq}. ${t.from ?? '?'} → ${t.to ?? '?'}  ${t.reason ?? ''}  (${t.by ?? '?'}, ${t.at ?? '?'})`);
  }
  return lines.join('\n');
}
