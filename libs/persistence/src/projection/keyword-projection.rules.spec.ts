import { keywordEvents } from './keyword.fixture.js';
import { foldEvents, type LoggedEvent } from './projection.rules.js';

const T0 = Date.UTC(2026, 11, 1, 12);
const logged = (events: ReturnType<typeof keywordEvents>): LoggedEvent[] =>
  events.map((event, i) => ({ seq: i + 1, event }));

describe('keyword projection', () => {
  const events = keywordEvents('555', T0, 1);

  it('keeps each term at its newest version, and a removed term as `removed` with its reason', () => {
    const terms = [...foldEvents(logged(events), { triggers: new Map() }).keywordTerms.values()];
    expect(terms).toEqual([
      expect.objectContaining({
        text: '原神',
        status: 'pinned',
        weight: 0.21,
        version: 4,
        aliases: ['原神啊'],
        lastChange: 'pinned',
      }),
      expect.objectContaining({ text: '开黑', status: 'removed', lastChange: 'expired', reason: 'expired: fixture' }),
    ]);
  });

  it('gives the same rows whatever order a redelivery applies the changes in', () => {
    const inOrder = foldEvents(logged(events), { triggers: new Map() });
    const shuffled = foldEvents(logged([...events].reverse()), { triggers: new Map() });
    const rows = (p: typeof inOrder) =>
      [...p.keywordTerms.values()].map((t) => [t.text, t.status, t.weight, t.version]).sort();
    expect(rows(shuffled)).toEqual(rows(inOrder));
    expect([...shuffled.keywordSets.values()]).toEqual([expect.objectContaining({ version: 4, terms: 1 })]);
  });

  it('records the hits a decision carried, one row per event and term', () => {
    const hits = [...foldEvents(logged(events), { triggers: new Map() }).keywordHits.values()];
    expect(hits).toEqual([
      expect.objectContaining({ term: '原神', scope: 'group', outcome: 'skip', threadId: 'th_1' }),
    ]);
  });
});
