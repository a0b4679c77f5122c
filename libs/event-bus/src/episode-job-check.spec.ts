import { EpisodeJob, EventKind, makeEvent, ValidationFailed, type MessagePayload } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { checkedEpisodeJob, episodeJobHolds } from './episode-job-check.js';

function message(text: string, kind: 'message.direct' | 'message.observed' = EventKind.MessageDirect) {
  return makeEvent({ kind, groupId: '30001', payload: sampleMessage(text), source: 'ingress' });
}

function job(): EpisodeJob {
  const trigger = message('小满 周末去哪玩');
  return {
    episodeId: `ep_${trigger.id}`,
    groupId: '30001',
    mode: 'start',
    trigger,
    fragments: [message('在吗')],
    inherited: [{ episodeId: 'ep_x', eventIds: ['e1'] }],
    context: [
      { eventId: 'e0', messageId: 'm0', userId: '10001', displayName: '阿明', text: '早', sentAt: 1, fromSelf: false },
    ],
    deadline: new Date(Date.now() + 60_000).toISOString(),
    controlSeq: 1,
    lane: 'direct',
  };
}

type Mutation = [string, (j: Record<string, unknown>) => void];
const payload = (j: Record<string, unknown>, at: 'trigger' | 'fragment') =>
  (at === 'trigger' ? (j.trigger as { payload: MessagePayload }) : (j.fragments as { payload: MessagePayload }[])[0]!)
    .payload as unknown as Record<string, unknown>;

const mutations: Mutation[] = [
  ['no change', () => undefined],
  ['episodeId not a string', (j) => (j.episodeId = 7)],
  ['episodeId too long', (j) => (j.episodeId = 'x'.repeat(129))],
  ['unknown mode', (j) => (j.mode = 'restart')],
  ['resume without resume info', (j) => (j.mode = 'resume')],
  ['resume with a bad cause', (j) => Object.assign(j, { mode: 'resume', resume: { cause: 'boom', eventId: 'e' } })],
  ['resume with its info', (j) => Object.assign(j, { mode: 'resume', resume: { cause: 'timer', eventId: 'e' } })],
  ['no trigger', (j) => delete j.trigger],
  ['trigger of another kind', (j) => ((j.trigger as Record<string, unknown>).kind = 'nope')],
  ['trigger without an id', (j) => delete (j.trigger as Record<string, unknown>).id],
  ['trigger text not a string', (j) => (payload(j, 'trigger').text = 5)],
  ['trigger sender missing', (j) => delete payload(j, 'trigger').sender],
  ['fragment text not a string', (j) => (payload(j, 'fragment').text = null)],
  ['fragments not an array', (j) => (j.fragments = { 0: 'x' })],
  ['fragment null', (j) => (j.fragments = [null])],
  ['too many fragments', (j) => (j.fragments = Array.from({ length: 33 }, () => message('再说一句')))],
  ['no fragments', (j) => delete j.fragments],
  ['context not an array', (j) => (j.context = 'x')],
  ['context line without text', (j) => delete (j.context as Record<string, unknown>[])[0]!.text],
  ['inherited with a bad id list', (j) => ((j.inherited as Record<string, unknown>[])[0]!.eventIds = [1])],
  ['deadline not a date', (j) => (j.deadline = 'tomorrow')],
  ['controlSeq zero', (j) => (j.controlSeq = 0)],
  ['unknown lane', (j) => (j.lane = 'fast')],
  [
    'an own __proto__ key on the trigger',
    (j) => Object.defineProperty(j.trigger, '__proto__', { value: {}, enumerable: true }),
  ],
];

function verdict(validate: (plain: EpisodeJob) => EpisodeJob, plain: EpisodeJob): string {
  try {
    return validate(plain) === plain ? 'valid' : 'valid (a copy)';
  } catch (error) {
    if (error instanceof ValidationFailed) return `invalid: ${error.message}`;
    throw error;
  }
}

describe('checkedEpisodeJob', () => {
  it.each(mutations)('answers as EpisodeJob.create does: %s', (_name, mutate) => {
    const plain = job();
    mutate(plain as unknown as Record<string, unknown>);
    expect(verdict(checkedEpisodeJob, plain)).toBe(verdict((p) => EpisodeJob.create(p), plain));
  });

  it('takes the fast way for the valid jobs a scheduler builds, without class-validator', () => {
    const valid = mutations.filter(([name]) => ['no change', 'resume with its info', 'no fragments'].includes(name));
    for (const [name, mutate] of valid) {
      const plain = job();
      mutate(plain as unknown as Record<string, unknown>);
      expect([name, episodeJobHolds(plain)]).toEqual([name, true]);
    }
    const many = job();
    many.context = Array.from({ length: 12 }, (_, i) => ({
      ...many.context[0]!,
      eventId: `e${i}`,
      messageId: `m${i}`,
    }));
    expect(episodeJobHolds(many)).toBe(true);
  });

  it('accepts a valid job as it is, and names the fields of an invalid one', () => {
    const plain = job();
    expect(checkedEpisodeJob(plain)).toBe(plain);
    (plain as unknown as Record<string, unknown>).deadline = 'tomorrow';
    expect(() => checkedEpisodeJob(plain)).toThrow(/deadline/);
  });
});
