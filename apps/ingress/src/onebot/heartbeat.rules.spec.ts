import { heartbeatDeadlineMs } from './heartbeat.rules.js';

describe('the forward WebSocket heartbeat watchdog', () => {
  it('gives up after twice the announced interval and a second', () => {
    expect(heartbeatDeadlineMs(30_000)).toBe(61_000);
    expect(heartbeatDeadlineMs(3_600_000)).toBe(7_201_000);
  });

  it('takes no deadline from an interval that is not one, so junk never arms a timer Node cannot hold', () => {
    for (const junk of [0, -1, 1.5, 2 ** 60, 3_600_001, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(heartbeatDeadlineMs(junk)).toBeUndefined();
    }
  });
});
