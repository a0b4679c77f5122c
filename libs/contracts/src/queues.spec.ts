import { EpisodeJob, episodeJobId, EventKind, makeEvent, ValidationFailed, type MessagePayload } from './index.js';

const message: MessagePayload = {
  messageType: 'group',
  selfId: '10001',
  messageId: '1',
  sender: { userId: '20001', nickname: 'Alice', card: '', displayName: 'Alice', role: 'member' },
  segments: [{ type: 'text', data: { text: '在吗' } }],
  text: '在吗',
  truncated: false,
  mentionsSelf: true,
  directReason: 'at',
  sentAt: 1_790_000_000,
};
const trigger = makeEvent({ kind: EventKind.MessageDirect, groupId: '30001', payload: message, source: 'ingress' });
const valid = {
  episodeId: 'ep_1',
  groupId: '30001',
  trigger,
  context: [],
  deadline: '2026-12-01T00:01:00.000Z',
};

describe('EpisodeJob.create', () => {
  it('accepts a well-formed job', () => {
    expect(EpisodeJob.create(valid)).toBe(valid);
  });

  it('names every bad field, inside the trigger envelope and the fragments too', () => {
    const broken = {
      ...valid,
      deadline: 'soon',
      trigger: { ...trigger, priority: 99 },
      fragments: [{ ...trigger, payload: { ...message, sentAt: 'x' } }],
      context: [{ eventId: 'e', messageId: 'm', userId: 'u', displayName: 'd', text: 't', sentAt: 1, fromSelf: 'no' }],
    } as unknown as EpisodeJob;
    let caught: unknown;
    try {
      EpisodeJob.create(broken);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ValidationFailed);
    const paths = (caught as ValidationFailed).fields.map((f) => f.path).sort();
    expect(paths).toEqual(['context.0.fromSelf', 'deadline', 'fragments[0].payload.sentAt', 'trigger.priority']);
  });

  it('carries the fragments taken over from superseded episodes, checked', () => {
    const inherited = [{ episodeId: 'ep_0', eventIds: ['e1', 'e2'] }];
    expect(EpisodeJob.create({ ...valid, inherited })).toMatchObject({ inherited });
    const broken = { ...valid, inherited: [{ episodeId: 7, eventIds: ['e1', 2] }] } as unknown as EpisodeJob;
    expect(() => EpisodeJob.create(broken)).toThrow(ValidationFailed);
  });

  it('requires what a continuation needs', () => {
    expect(() => EpisodeJob.create({ ...valid, mode: 'resume' })).toThrow(/resume required by mode resume/);
  });

  it('gives each run of an episode its own job id, without the `:` BullMQ forbids', () => {
    expect(episodeJobId('ep_1')).toBe('ep_1');
    expect(episodeJobId('ep_1', 'resume', 3)).toBe('ep_1-r3');
    expect(episodeJobId('ep_1', 'resume', 3)).not.toContain(':');
  });
});
