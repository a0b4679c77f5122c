import { RECONNECT_CAP_MS, reconnectDelayMs } from './reconnect.policy.js';

describe('forward WebSocket reconnect backoff', () => {
  it('doubles from 0.5 s and stops at the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => reconnectDelayMs(n))).toEqual([
      500, 1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]);
    expect(reconnectDelayMs(1000)).toBe(RECONNECT_CAP_MS);
  });

  it('jitter takes at most half of the step off', () => {
    expect(reconnectDelayMs(3, 0.999)).toBe(1001);
    expect(reconnectDelayMs(3, 0.5)).toBe(1500);
    expect(reconnectDelayMs(20, 0.999)).toBeGreaterThanOrEqual(RECONNECT_CAP_MS / 2);
    expect(reconnectDelayMs(3, 7)).toBe(1000);
  });
});
