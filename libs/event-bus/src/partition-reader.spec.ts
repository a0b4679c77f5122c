import { untilNextBeat } from './partition-reader.js';

describe('untilNextBeat', () => {
  it('waits until the next multiple of the linger, so readers that finished at different moments read together', () => {
    const lingerMs = 200;
    const finished = [1_000, 1_013.5, 1_120, 1_199];
    const readAt = finished.map((now) => now + untilNextBeat(now, lingerMs));
    expect(readAt).toEqual([1_200, 1_200, 1_200, 1_200]);
  });

  it('waits a whole linger at most, and never less than a millisecond', () => {
    expect(untilNextBeat(1_400, 200)).toBe(200);
    expect(untilNextBeat(1_399.5, 200)).toBe(1);
    expect(untilNextBeat(1_401, 200)).toBe(199);
  });
});
