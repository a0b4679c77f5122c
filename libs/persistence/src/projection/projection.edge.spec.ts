import { EventKind, makeEvent, type EventEnvelope } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { foldEvents, type LoggedEvent } from './projection.rules.js';

const at = new Date('2026-03-01T10:00:00.000Z');
const logged = (events: EventEnvelope[]): LoggedEvent[] => events.map((event, i) => ({ seq: i + 1, event }));

describe('projection of the OneBot edge (issue 5)', () => {
  const message = makeEvent({
    kind: EventKind.MessageObserved,
    groupId: '30001',
    source: 'ingress',
    payload: sampleMessage('你好', { messageId: '77' }),
    createdAt: at,
  });

  it('marks a recalled message and records the recall as a notice', () => {
    const recall = makeEvent({
      kind: EventKind.MessageRecalled,
      groupId: '30001',
      source: 'ingress',
      createdAt: at,
      payload: {
        messageType: 'group',
        selfId: '10001',
        messageId: '77',
        userId: '20001',
        operatorId: '20009',
        recalledAt: 1_772_359_300,
        eventId: message.id,
      },
    });
    const projection = foldEvents(logged([message, recall]), { triggers: new Map() });
    expect(projection.messages.get(message.id)).toMatchObject({
      text: '你好',
      recalledAt: new Date(1_772_359_300_000),
    });
    expect([...projection.notices.values()]).toEqual([
      expect.objectContaining({ noticeType: 'group_recall', messageId: '77', operatorId: '20009', groupId: '30001' }),
    ]);
  });

  it('records the bot’s own reported messages as from_self, notices and requests in their tables', () => {
    const echo = makeEvent({
      kind: EventKind.MessageEchoed,
      groupId: '30001',
      source: 'ingress',
      createdAt: at,
      payload: sampleMessage('我自己说的', {
        sender: { userId: '10001', nickname: '小满', card: '', displayName: '小满', role: 'member' },
      }),
    });
    const notice = makeEvent({
      kind: EventKind.NoticeReceived,
      groupId: '30001',
      source: 'ingress',
      createdAt: at,
      payload: {
        noticeType: 'group_ban',
        subType: 'ban',
        scope: 'group',
        selfId: '10001',
        userId: '20002',
        operatorId: '20003',
        durationSeconds: 600,
        aboutSelf: false,
        details: {},
        reportedAt: 1,
      },
    });
    const request = makeEvent({
      kind: EventKind.RequestReceived,
      groupId: '30001',
      source: 'ingress',
      createdAt: at,
      payload: {
        requestType: 'group',
        subType: 'add',
        selfId: '10001',
        userId: '20004',
        comment: '求加',
        flag: 'f1',
        reportedAt: 2,
      },
    });
    const projection = foldEvents(logged([echo, notice, request]), { triggers: new Map() });
    expect(projection.messages.get(echo.id)).toMatchObject({
      fromSelf: true,
      direct: false,
      userId: '10001',
      text: '我自己说的',
    });
    expect(projection.notices.get(notice.id)).toMatchObject({ noticeType: 'group_ban', durationSeconds: 600 });
    expect(projection.requests.get(request.id)).toMatchObject({ requestType: 'group', flag: 'f1', comment: '求加' });
  });

  it('a dropped reply settles its sends row as dropped, keeping what was not said', () => {
    const dropped = makeEvent({
      kind: EventKind.SendDropped,
      groupId: '30001',
      source: 'outbound',
      createdAt: at,
      payload: {
        actionId: 'act_1',
        episodeId: 'ep_1',
        triggerEventId: message.id,
        targetType: 'group',
        targetId: '30001',
        reason: 'trigger_recalled',
        partsSent: 0,
        partsPlanned: 0,
        text: '好的',
      },
    });
    const projection = foldEvents(logged([dropped]), { triggers: new Map() });
    expect([...projection.sends.values()]).toEqual([
      expect.objectContaining({ actionId: 'act_1', segment: 0, state: 'dropped', text: '好的', phase: 1 }),
    ]);
  });
});
