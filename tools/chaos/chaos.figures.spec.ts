import { chaosFigures, type ChaosEvidence } from './chaos.figures.js';
import { chaosReply, replyParts, type TrafficItem } from './chaos.traffic.js';

const item = (index: number, groupId: string, mention: boolean): TrafficItem => ({
  index,
  token: `#m${index}`,
  groupId,
  userId: '30001',
  mention,
  messageId: 1000 + index,
});

function evidence(overrides: Partial<ChaosEvidence>): ChaosEvidence {
  const accepted = [item(1, 'g1', true), item(2, 'g1', false), item(3, 'g2', true)];
  const ids = new Set(accepted.map((m) => String(m.messageId)));
  return {
    accepted,
    inMessages: ids,
    inEventLog: ids,
    planned: [
      { groupId: 'g1', text: chaosReply('#m1') },
      { groupId: 'g2', text: chaosReply('#m3') },
    ],
    deliveries: [
      { seq: 1, groupId: 'g1', text: '回#m1·1 收到啦。' },
      { seq: 2, groupId: 'g2', text: '回#m3·1 收到啦。' },
      { seq: 3, groupId: 'g1', text: '回#m1·2 我想想哈。' },
      { seq: 4, groupId: 'g2', text: '回#m3·2 我想想哈。' },
    ],
    ...overrides,
  };
}

describe('chaos figures', () => {
  it('are all zero for a clean run: every message archived, every part once, in order, every @ answered', () => {
    expect(chaosFigures(evidence({}))).toMatchObject({
      accepted: 3,
      archived: 3,
      lost: 0,
      duplicateSends: 0,
      orderViolations: 0,
      unanswered: 0,
      undeliveredParts: 0,
      deliveredParts: 4,
      plannedParts: 4,
    });
  });

  it('counts an accepted message missing from either the read model or the archived log as lost', () => {
    const figures = chaosFigures(
      evidence({ inMessages: new Set(['1001', '1002']), inEventLog: new Set(['1002', '1003']) }),
    );
    expect(figures.archived).toBe(1);
    expect(figures.lost).toBe(2);
  });

  it('counts a part delivered again as a duplicate, however late', () => {
    const base = evidence({});
    const figures = chaosFigures({
      ...base,
      deliveries: [...base.deliveries, { seq: 9, groupId: 'g1', text: '回#m1·1 收到啦。' }],
    });
    expect(figures.duplicateSends).toBe(1);
    expect(figures.orderViolations).toBe(0);
  });

  it('counts a part or a later reply that overtakes an earlier one of the same group, not across groups', () => {
    const planned = [
      { groupId: 'g1', text: chaosReply('#m1') },
      { groupId: 'g1', text: chaosReply('#m2') },
    ];
    const figures = chaosFigures(
      evidence({
        planned,
        deliveries: [
          { seq: 1, groupId: 'g1', text: '回#m1·2 我想想哈。' },
          { seq: 2, groupId: 'g1', text: '回#m1·1 收到啦。' },
          { seq: 3, groupId: 'g1', text: '回#m2·1 收到啦。' },
          { seq: 4, groupId: 'g1', text: '回#m2·2 我想想哈。' },
        ],
      }),
    );
    expect(figures.orderViolations).toBe(1);
    expect(figures.unanswered).toBe(1); // #m3 in g2 got nothing
  });

  it('counts an @ answered only in another group, or not at all, as unanswered, and what never arrived', () => {
    const figures = chaosFigures(
      evidence({ deliveries: [{ seq: 1, groupId: 'g2', text: '回#m1·1 收到啦。\n回#m3·1 收到啦。' }] }),
    );
    expect(figures.unanswered).toBe(1);
    expect(figures.undeliveredParts).toBe(3);
  });

  it('reads every token and part of a reply, including merged ones', () => {
    expect(replyParts(chaosReply('在吗 #m7 还有 #m9'))).toEqual([
      { token: '#m7', part: 1 },
      { token: '#m7', part: 2 },
      { token: '#m9', part: 1 },
      { token: '#m9', part: 2 },
    ]);
    expect(chaosReply('没有记号')).toBe('嗯嗯');
  });
});
