import { backoffMs, stepFor, verdictFor } from './send.policy.js';

const at = '2025-01-01T00:00:00.000Z';

describe('send policy', () => {
  it('sends a segment never touched, and resumes one that was only ever unreachable', () => {
    expect(stepFor(undefined)).toEqual({ kind: 'send', attempt: 1 });
    expect(stepFor({ state: 'pending', attempts: 2, at })).toEqual({ kind: 'send', attempt: 3 });
  });

  it('never sends again what was sent, settled, or in flight when we crashed', () => {
    expect(stepFor({ state: 'sent', attempts: 1, onebotMessageId: '5', at }).kind).toBe('already-sent');
    expect(stepFor({ state: 'failed', attempts: 1, at }).kind).toBe('already-settled');
    expect(stepFor({ state: 'unknown', attempts: 1, at }).kind).toBe('already-settled');
    expect(stepFor({ state: 'sending', attempts: 1, at })).toEqual({ kind: 'interrupted', attempts: 1 });
  });

  it('retries only when nothing was sent, with growing backoff, and gives up after the last attempt', () => {
    const unreachable = { kind: 'unreachable', code: 'ONEBOT.UNREACHABLE', message: 'ECONNREFUSED' } as const;
    expect(verdictFor(unreachable, 1, { maxAttempts: 3 })).toMatchObject({ kind: 'retry', delayMs: 250 });
    expect(verdictFor(unreachable, 2, { maxAttempts: 3 })).toMatchObject({ kind: 'retry', delayMs: 500 });
    expect(verdictFor(unreachable, 3, { maxAttempts: 3 })).toMatchObject({
      kind: 'failed',
      error: { code: 'SEND.UNREACHABLE' },
    });
    expect(backoffMs(20, { maxAttempts: 30 })).toBe(5000);
  });

  it('never retries an unknown or a refusal', () => {
    const unknown = { kind: 'unknown', code: 'ONEBOT.TIMEOUT', message: 't', retcode: 1200 } as const;
    const failed = { kind: 'failed', code: 'ONEBOT.BAD_REQUEST', message: 'b', retcode: 1400 } as const;
    expect(verdictFor(unknown, 1, { maxAttempts: 3 })).toEqual({
      kind: 'unknown',
      error: { code: 'ONEBOT.TIMEOUT', message: 't' },
      retcode: 1200,
    });
    expect(verdictFor(failed, 1, { maxAttempts: 3 }).kind).toBe('failed');
  });

  it('takes the message id from a confirmation', () => {
    expect(verdictFor({ kind: 'ok', data: { message_id: -12 } }, 1, { maxAttempts: 3 })).toEqual({
      kind: 'sent',
      onebotMessageId: '-12',
    });
    expect(verdictFor({ kind: 'ok', data: undefined }, 1, { maxAttempts: 3 })).toEqual({
      kind: 'sent',
      onebotMessageId: '',
    });
  });
});
