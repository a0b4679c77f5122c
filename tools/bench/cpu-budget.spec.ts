import { busyShare, cpuBudget, machineTicks } from './cpu-budget.js';

describe('cpuBudget', () => {
  it('sums the parts of the path and turns the sum into the rate that fills every core', () => {
    const budget = cpuBudget(
      { ingress: 140, scheduler: 1100, postgres: 340, postgresBackends: 335, redis: 130, loadGenerator: 40 },
      2,
    );
    // postgresBackends is a part of postgres and is not counted twice.
    expect(budget.machineUsPerMessage).toBe(1750);
    expect(budget.cpuBoundMsgPerSec).toBe(1142.9);
    expect(budget.shares).toEqual({
      ingress: 0.08,
      scheduler: 0.629,
      postgres: 0.194,
      redis: 0.074,
      loadGenerator: 0.023,
    });
    expect(budget.missing).toEqual([]);
  });

  it('names a part that was not measured, and the rate is then an upper bound', () => {
    const budget = cpuBudget({ ingress: 100, scheduler: 900, loadGenerator: 0 }, 4);
    expect(budget.machineUsPerMessage).toBe(1000);
    expect(budget.cpuBoundMsgPerSec).toBe(4000);
    expect(budget.missing).toEqual(['postgres', 'redis']);
  });

  it("counts a part's replicas as that part", () => {
    const budget = cpuBudget({ ingress: 100, scheduler: 600, 'scheduler-2': 500, postgres: 300, redis: 100 }, 2);
    expect(budget.machineUsPerMessage).toBe(1600);
    expect(budget.shares.scheduler).toBe(0.688);
    expect(budget.missing).toEqual(['loadGenerator']);
  });

  it('has no rate when nothing was measured, and refuses a machine without cores', () => {
    expect(cpuBudget({}, 2)).toEqual({
      machineUsPerMessage: 0,
      cpuBoundMsgPerSec: null,
      shares: {},
      missing: expect.any(Array),
    });
    expect(() => cpuBudget({ scheduler: 1 }, 0)).toThrow(/cores must be positive/);
  });
});

describe('machineTicks and busyShare', () => {
  const stat = (user: number, idle: number) =>
    `cpu  ${user} 0 100 ${idle} 20 0 5 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\n`;

  it('reads the aggregate line: busy is everything but idle and iowait', () => {
    expect(machineTicks(stat(1000, 5000))).toEqual({ busy: 1105, total: 6125 });
  });

  it('gives the busy share of the ticks between two readings', () => {
    expect(busyShare(machineTicks(stat(1000, 5000)), machineTicks(stat(1900, 5100)))).toBe(0.9);
  });

  it('has no figure without two readings that moved', () => {
    expect(machineTicks('intr 1 2 3\n')).toBeUndefined();
    expect(busyShare(undefined, machineTicks(stat(1, 1)))).toBeUndefined();
    expect(busyShare(machineTicks(stat(1, 1)), machineTicks(stat(1, 1)))).toBeUndefined();
  });
});
