import { EventKind, makeEvent } from '@app/contracts';
import { SendOutcomeEvents } from './send-outcome.events.js';

const action = (groupId: string, targetId: string) =>
  makeEvent({
    kind: EventKind.ActionSend,
    groupId,
    source: 'cognition',
    payload: {
      actionId: 'act_1',
      episodeId: 'ep_1',
      triggerEventId: 't1',
      targetType: 'group',
      targetId,
      text: '你们好',
      motivation: '在 30001 有人让我来问候',
    },
  });
const plan = { form: 'text' as const, parts: ['你们好'], polished: false, at: '' };
const entry = { state: 'sent' as const, attempts: 1, at: '' };

describe('the facts outbound appends', () => {
  it('a cross-group reply is recorded in the target group, with its motivation note (never sent)', () => {
    const event = action('30001', '30002');
    const sent = new SendOutcomeEvents(event, '30002', () => new Date(0)).sent(plan, 0, entry, '77');
    expect(sent).toMatchObject({
      groupId: '30002',
      causationId: event.id,
      payload: { onebotMessageId: '77', motivation: '在 30001 有人让我来问候', form: 'text' },
    });
  });

  it('a reply in its own group carries no note', () => {
    const sent = new SendOutcomeEvents(action('30001', '30001'), '30001', () => new Date(0)).sent(plan, 0, entry, '77');
    expect(sent.payload).not.toHaveProperty('motivation');
  });
});
