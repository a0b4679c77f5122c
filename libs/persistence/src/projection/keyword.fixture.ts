import { EventKind, makeEvent, type EventEnvelope, type KeywordTermChangedPayload } from '@app/contracts';
import { messagePayload } from './chain.fixture.js';

/**
 * A group's keyword lexicon as the log tells it: a word promoted, weakened by feedback, pinned by a person, a
 * second one expired, the set's versions, and a decision that recorded keyword hits.
 */
export function keywordEvents(groupId: string, startMs: number, n = 0): EventEnvelope[] {
  const at = (offsetMs: number) => new Date(startMs + offsetMs);
  const iso = (offsetMs: number) => at(offsetMs).toISOString();
  const term = (
    termId: string,
    text: string,
    change: KeywordTermChangedPayload['change'],
    version: number,
    weight: number,
  ) =>
    makeEvent({
      kind: EventKind.KeywordTermChanged,
      groupId,
      source: 'scheduler',
      createdAt: at(version * 1000),
      payload: {
        termId,
        scope: 'group',
        ownerId: groupId,
        change,
        text,
        aliases: change === 'pinned' ? [`${text}啊`] : [],
        weight,
        confidence: 0.6,
        source: 'extracted',
        status: change === 'pinned' ? 'pinned' : 'active',
        sightings: 3,
        firstSeenAt: iso(0),
        lastSeenAt: iso(version * 1000),
        ...(change === 'expired' ? {} : { expiresAt: iso(86_400_000) }),
        version,
        reason: `${change}: fixture`,
      },
    });
  const versioned = (version: number, terms: number, changed: string[]) =>
    makeEvent({
      kind: EventKind.KeywordLexiconVersioned,
      groupId,
      source: 'scheduler',
      createdAt: at(version * 1000 + 1),
      payload: { scope: 'group', ownerId: groupId, version, terms, changedTermIds: changed },
    });
  const a = `kt_fixture_${groupId}_${n}_a`;
  const b = `kt_fixture_${groupId}_${n}_b`;
  const message = makeEvent({
    kind: EventKind.MessageObserved,
    groupId,
    source: 'ingress',
    createdAt: at(2500),
    payload: messagePayload({
      messageId: String(3_000_000 + n),
      text: '原神启动',
      sentAt: Math.floor((startMs + 2500) / 1000),
    }),
  });
  return [
    term(a, '原神', 'promoted', 1, 0.25),
    term(b, '开黑', 'promoted', 1, 0.25),
    versioned(1, 2, [a, b]),
    message,
    makeEvent({
      kind: EventKind.DecisionMade,
      groupId,
      source: 'scheduler',
      cause: message,
      createdAt: at(2600),
      payload: {
        subjectEventId: message.id,
        outcome: 'skip',
        reason: 'skipped: 0.31 < 0.55 (keyword 原神)',
        features: { keywords: 0.25 },
        threadId: `th_${n}`,
        keywordHits: [{ termId: a, term: '原神', scope: 'group', weight: 0.25 }],
        transitions: [{ seq: 1, from: 'captured', to: 'skipped', reason: 'attention low', forced: false }],
      },
    }),
    term(a, '原神', 'weakened', 3, 0.21),
    makeEvent({
      kind: EventKind.KeywordControlRequested,
      groupId,
      source: 'cli',
      createdAt: at(3500),
      payload: { command: 'pin', scope: 'group', ownerId: groupId, term: '原神', requestedBy: 'fixture' },
    }),
    term(a, '原神', 'pinned', 4, 0.21),
    term(b, '开黑', 'expired', 4, 0.25),
    versioned(4, 1, [a, b]),
  ];
}
