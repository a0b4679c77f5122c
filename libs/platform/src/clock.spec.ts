import { Clock } from './clock.js';

describe('Clock', () => {
  it('is wall time at scale 1, whatever the epoch', () => {
    const clock = new Clock(1, 123, () => 1_000_000);
    expect(clock.nowMs()).toBe(1_000_000);
    expect(clock.real(5000)).toBe(5000);
    expect(clock.ttlSeconds(30)).toBe(30);
  });

  it('runs product time scale times faster from the shared epoch', () => {
    let wall = 10_000;
    const clock = new Clock(60, 10_000, () => wall);
    expect(clock.nowMs()).toBe(10_000);
    wall += 1000; // one real second is a product minute
    expect(clock.nowMs()).toBe(10_000 + 60_000);
    expect(clock.since(10_000)).toBe(60_000);
  });

  it('gives two processes with the same epoch the same product time', () => {
    const wall = () => 50_000;
    expect(new Clock(10, 20_000, wall).nowMs()).toBe(new Clock(10, 20_000, wall).nowMs());
  });

  it('converts product durations and instants to real waits', () => {
    const clock = new Clock(60, 0, () => 0);
    expect(clock.real(60_000)).toBe(1000);
    expect(clock.product(1000)).toBe(60_000);
    expect(clock.realUntil(120_000)).toBe(2000);
    expect(clock.realUntil(-5)).toBe(0);
    expect(clock.ttlSeconds(600)).toBe(10);
    expect(clock.ttlSeconds(1)).toBe(1);
    expect(clock.ttlMs(30)).toBe(1);
    expect(clock.after(30_000).getTime()).toBe(30_000);
  });

  it('refuses a scale that is not a positive number', () => {
    expect(() => new Clock(0)).toThrow(RangeError);
    expect(() => new Clock(Number.NaN)).toThrow(RangeError);
  });
});
