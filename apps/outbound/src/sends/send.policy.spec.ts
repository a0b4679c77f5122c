import { backoffMs, stepFor, verdictFor, whenUnverifiable } from './send.policy.js';

describe('send policy: what each ledger state and API outcome means', () => {
  it('sends what never went out, verifies what may have, leaves what is settled', () => {
    expect(stepFor(undefined)).toEqual({ kind: 'send', attempt: 1 });
    expect(stepFor({ state: 'pending', attempts: 2, at: '' })).toEqual({ kind: 'send', attempt: 3 });
    expect(stepFor({ state: 'sending', attempts: 1, at: '' })).toEqual({ kind: 'verify', cause: 'interrupted' });
    expect(stepFor({ state: 'unsure', attempts: 1, at: '', cause: 'risk_control' })).toEqual({
      kind: 'verify',
      cause: 'risk_control',
    });
    for (const state of ['sent', 'failed', 'unknown', 'dropped'] as const) {
      expect(stepFor({ state, attempts: 1, at: '' })).toEqual({ kind: 'settled' });
    }
  });

  it('ok with a message id is sent; ok without one is a silent drop, to be verified', () => {
    expect(verdictFor({ kind: 'ok', data: { message_id: -5 } }, 1, 3)).toEqual({ kind: 'sent', onebotMessageId: '-5' });
    expect(verdictFor({ kind: 'ok', data: undefined }, 1, 3)).toMatchObject({ kind: 'unsure', cause: 'silent_drop' });
  });

  it('retcode 1200 (and 200 over HTTP) is risk control: unknown, never a plain retry', () => {
    expect(verdictFor({ kind: 'unknown', code: 'ONEBOT.TIMEOUT', message: 't', retcode: 1200 }, 1, 3)).toMatchObject({
      kind: 'unsure',
      cause: 'risk_control',
      retcode: 1200,
    });
    expect(verdictFor({ kind: 'unknown', code: 'ONEBOT.TIMEOUT', message: 't', retcode: 200 }, 1, 3)).toMatchObject({
      cause: 'risk_control',
    });
    expect(verdictFor({ kind: 'unknown', code: 'ONEBOT.CONNECTION_LOST', message: 'x' }, 1, 3)).toMatchObject({
      kind: 'unsure',
      cause: 'lost',
    });
  });

  it('a refusal or an unreachable peer is retried until the attempts are used up', () => {
    expect(verdictFor({ kind: 'failed', code: 'ONEBOT.REFUSED', message: 'x', retcode: 100 }, 2, 3)).toMatchObject({
      kind: 'refused',
      retryable: true,
    });
    expect(verdictFor({ kind: 'unreachable', code: 'ONEBOT.UNREACHABLE', message: 'x' }, 3, 3)).toMatchObject({
      kind: 'refused',
      retryable: false,
    });
  });

  it('when verification is impossible: a silent drop is tried again, anything else ends unknown', () => {
    expect(whenUnverifiable('silent_drop', 1, 3)).toBe('retry');
    expect(whenUnverifiable('silent_drop', 3, 3)).toBe('failed');
    expect(whenUnverifiable('risk_control', 1, 3)).toBe('unknown');
    expect(whenUnverifiable('interrupted', 1, 3)).toBe('unknown');
  });

  it('backs off 1 s → 2 s → 4 s, capped', () => {
    expect([1, 2, 3].map((a) => backoffMs(a, 1000))).toEqual([1000, 2000, 4000]);
    expect(backoffMs(20, 1000)).toBe(30_000);
  });
});
