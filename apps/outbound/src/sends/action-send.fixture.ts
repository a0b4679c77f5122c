import { EventKind, makeEvent, newEventId, type EventOf } from '@app/contracts';

/** A one-line `action.send` to group `targetId`, with fresh ids (the outbound specs' reply). */
export function actionSend(targetId: string): EventOf<'action.send'> {
  return makeEvent({
    kind: EventKind.ActionSend,
    groupId: targetId,
    source: 'test',
    payload: {
      actionId: `act_${newEventId()}_0`,
      episodeId: 'ep',
      triggerEventId: newEventId(),
      targetType: 'group',
      targetId,
      text: 'x',
    },
  });
}
