import type { MessagePayload } from '@app/contracts';
import { sampleMessage } from '@app/testing';
import { decideOnMessage } from './message-decision.policy.js';

const base: MessagePayload = sampleMessage('今天吃什么');

describe('message decision', () => {
  it('sends an @-mention to deliberation through every intermediate state', () => {
    const decision = decideOnMessage('e1', { ...base, mentionsSelf: true, directReason: 'at' });
    expect(decision.outcome).toBe('deliberate');
    expect(decision.reason).toContain('@了机器人');
    expect(decision.features).toMatchObject({ directness: 1, at: 1 });
    expect(decision.transitions.map((t) => t.to)).toEqual([
      'classified',
      'linked',
      'scheduled',
      'eligible',
      'deliberating',
    ]);
  });

  it('records and skips an ambient message with a readable reason', () => {
    const decision = decideOnMessage('e2', base);
    expect(decision.outcome).toBe('skip');
    expect(decision.reason).toMatch(/^skipped: not addressed to the bot/);
    expect(decision.features.directness).toBe(0);
    expect(decision.transitions.map((t) => t.to)).toEqual(['classified', 'linked', 'skipped']);
  });

  it('treats private messages and name calls as direct', () => {
    expect(decideOnMessage('e3', { ...base, directReason: 'private' }).outcome).toBe('deliberate');
    expect(decideOnMessage('e4', { ...base, directReason: 'name' }).features.name).toBe(1);
  });
});
