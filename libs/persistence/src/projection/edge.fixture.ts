import { EventKind, makeEvent, type EventEnvelope } from '@app/contracts';

/** What the OneBot edge adds around a chain (issue 5): a notice, a request and a recall of the chain's message. */
export function edgeEvents(
  groupId: string,
  startMs: number,
  recalledEventId: string,
  messageId: string,
): EventEnvelope[] {
  const at = (offsetMs: number) => new Date(startMs + offsetMs);
  const seconds = Math.floor(startMs / 1000);
  return [
    makeEvent({
      kind: EventKind.NoticeReceived,
      groupId,
      source: 'ingress',
      createdAt: at(1),
      payload: {
        noticeType: 'group_increase',
        subType: 'approve',
        scope: 'group',
        selfId: '10001',
        userId: '20031',
        operatorId: '20001',
        aboutSelf: false,
        details: {},
        reportedAt: seconds,
      },
    }),
    makeEvent({
      kind: EventKind.RequestReceived,
      groupId,
      source: 'ingress',
      createdAt: at(2),
      payload: {
        requestType: 'group',
        subType: 'add',
        selfId: '10001',
        userId: '20032',
        comment: '你好',
        flag: `${groupId}|${startMs}`,
        reportedAt: seconds,
      },
    }),
    makeEvent({
      kind: EventKind.MessageRecalled,
      groupId,
      source: 'ingress',
      createdAt: at(5000),
      payload: {
        messageType: 'group',
        selfId: '10001',
        messageId,
        userId: '20001',
        operatorId: '20001',
        recalledAt: seconds + 5,
        eventId: recalledEventId,
      },
    }),
  ];
}
