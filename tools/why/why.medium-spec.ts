import { DataSource } from 'typeorm';
import { EventKind, makeEvent, type EventEnvelope, type EventState } from '@app/contracts';
import { dataSourceOptions, ProjectionRepository, ProjectorService } from '@app/persistence';
import { Metrics } from '@app/platform';
import { createTestDatabase, sampleMessage, type TestDatabase } from '@app/testing';
import type { DecisionNote } from '../simulator/simulator.js';
import { watchDecisions } from '../simulator/stack-watch.js';
import { formatWhy, whyOf } from './why.js';

/*
 * Where a person looks for "why": `npm run why` and the simulator read the decision of one message from the
 * Postgres projections, fed here by the real projector from scheduler-shaped events.
 */

const GROUP = '810001';
const T0 = Date.UTC(2026, 11, 1, 8);

function events(): { message: EventEnvelope; all: EventEnvelope[] } {
  const message = makeEvent({
    kind: EventKind.MessageObserved,
    groupId: GROUP,
    source: 'ingress',
    createdAt: new Date(T0),
    payload: sampleMessage('有人知道猫咪吐毛球怎么办吗？', {
      messageId: '777',
      sender: { userId: '40002', nickname: 'alice', card: '', displayName: 'alice', role: 'member' },
    }),
  });
  const scheduler = { groupId: GROUP, source: 'scheduler', cause: message } as const;
  const transition = (seq: number, from: EventState, to: EventState, reason: string) => ({
    seq,
    from,
    to,
    reason,
    forced: false,
    by: 'scheduler',
    at: new Date(T0 + seq * 1000).toISOString(),
  });
  const snooze = makeEvent({
    ...scheduler,
    kind: EventKind.DecisionMade,
    createdAt: new Date(T0 + 2000),
    payload: {
      subjectEventId: message.id,
      outcome: 'snooze',
      reason: 'snoozed: 0.42 ≤ 0.52 < 0.67 (about 猫, a question, new topic, look again in 42 s)',
      features: { interest: 0.7, question: 1, score: 0.52 },
      threadId: `t-${message.id}`,
      keywordHits: [],
      transitions: [
        transition(1, 'captured', 'classified', 'classified: ambient'),
        transition(2, 'classified', 'linked', `linked: thread t-${message.id} (a new thread)`),
        transition(3, 'linked', 'scheduled', 'scheduled: debouncing'),
        transition(4, 'scheduled', 'snoozed', 'snoozed: 0.42 ≤ 0.52 < 0.67'),
      ],
    },
  });
  const deliberate = makeEvent({
    ...scheduler,
    kind: EventKind.DecisionMade,
    createdAt: new Date(T0 + 44_000),
    payload: {
      subjectEventId: message.id,
      outcome: 'deliberate',
      reason: 'deliberate: 0.87 ≥ 0.67 (nobody answered in 44 s, about 猫, a question)',
      features: { interest: 0.7, question: 1, obligation: 1, score: 0.87 },
      threadId: `t-${message.id}`,
      keywordHits: [{ termId: 'k1', term: '毛球', scope: 'group', weight: 0.4 }],
      episodeId: 'ep-1',
      transitions: [transition(5, 'snoozed', 'eligible', 'deliberate: 0.87 ≥ 0.67')],
    },
  });
  const thread = makeEvent({
    ...scheduler,
    kind: EventKind.ThreadUpdated,
    threadId: `t-${message.id}`,
    createdAt: new Date(T0),
    payload: {
      threadId: `t-${message.id}`,
      version: 1,
      startedAt: new Date(T0).toISOString(),
      lastActivityAt: new Date(T0).toISOString(),
      participants: ['40002'],
      messages: 1,
      botJoined: false,
      openQuestions: [
        { eventId: message.id, senderId: '40002', askedAt: new Date(T0).toISOString(), text: '猫咪吐毛球怎么办' },
      ],
      link: 'new',
      subjectEventId: message.id,
    },
  });
  return { message, all: [message, thread, snooze, deliberate] };
}

describe('why: a decision, its features, reason and transitions, from the projections', () => {
  let database: TestDatabase;
  let db: DataSource;
  let projector: ProjectorService;
  let n = 0;

  const project = (list: EventEnvelope[]) =>
    projector.handleBatch(
      list.map((event) => ({ partition: 0, entryId: `${1_800_000_000_000 + n++}-0`, event, deliveries: 1 })),
    );

  beforeAll(async () => {
    database = await createTestDatabase('why');
    db = await new DataSource(dataSourceOptions(database.url)).initialize();
    projector = new ProjectorService(new ProjectionRepository(db), new Metrics('test', false));
  }, 60_000);

  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('prints every decision about a message (by its OneBot id or event id), its thread and its transitions', async () => {
    const { message, all } = events();
    await project(all);
    const byMessageId = await whyOf(db, '777');
    const byEventId = await whyOf(db, message.id);
    expect(byEventId).toEqual(byMessageId);
    const text = formatWhy(byMessageId!);
    expect(text).toContain('有人知道猫咪吐毛球怎么办吗？');
    expect(text).toContain('earlier (2026-12-01T08:00:02.000Z): snoozed: 0.42 ≤ 0.52 < 0.67');
    expect(text).toContain('decision (2026-12-01T08:00:44.000Z): deliberate: 0.87 ≥ 0.67 (nobody answered in 44 s');
    expect(text).toContain('score 0.87 · interest 0.70 · question 1.00 · obligation 1.00');
    expect(text).toContain('keywords: 毛球 [group 0.4]');
    expect(text).toContain(
      `thread t-${message.id} (live): 1 messages, 40002 (bot not in it); open questions: 40002: 猫咪吐毛球怎么办`,
    );
    expect(text).toMatch(/5\. snoozed → eligible {2}deliberate: 0\.87 ≥ 0\.67 {2}\(scheduler, /);
    expect(await whyOf(db, 'no-such-id')).toBeUndefined();
  });

  it('explains as much when the thread snapshot rides in the decision (ADR-0024)', async () => {
    const { message, all } = events();
    const [msg, thread, snooze, deliberate] = all as [EventEnvelope, EventEnvelope, EventEnvelope, EventEnvelope];
    const carrier = { ...snooze, payload: { ...(snooze.payload as object), turn: { threads: [thread.payload] } } };
    await project([msg, carrier, deliberate]);
    const text = formatWhy((await whyOf(db, message.id))!);
    expect(text).toContain('earlier (2026-12-01T08:00:02.000Z): snoozed: 0.42 ≤ 0.52 < 0.67');
    expect(text).toContain(
      `thread t-${message.id} (live): 1 messages, 40002 (bot not in it); open questions: 40002: 猫咪吐毛球怎么办`,
    );
  });

  it('the simulator hears each new decision for the message it is about', async () => {
    const seen: DecisionNote[] = [];
    const stop = watchDecisions(database.url, (note) => seen.push(note));
    try {
      // The watch starts after what is archived already.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const { all } = events();
      await project(all);
      for (let i = 0; i < 60 && seen.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(seen.map((s) => [s.conversation, s.messageId, s.decision.outcome])).toEqual([
        [`g:${GROUP}`, '777', 'snooze'],
        [`g:${GROUP}`, '777', 'deliberate'],
      ]);
      expect(seen[1]!.decision.reason).toMatch(/^deliberate: 0\.87 ≥ 0\.67/);
    } finally {
      await stop();
    }
  });
});
