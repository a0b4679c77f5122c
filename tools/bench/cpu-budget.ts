import { readFileSync } from 'node:fs';
import { round } from './load.js';

/**
 * The processes whose CPU a message costs on a one-machine run: the two apps on its path, the two servers and the
 * bench process that generates the load. `postgresBackends` is left out: it is a part of `postgres`.
 */
export const BUDGET_PARTS = ['ingress', 'scheduler', 'postgres', 'redis', 'loadGenerator'] as const;

export interface CpuBudget {
  /** CPU microseconds per message summed over the parts that were measured. */
  machineUsPerMessage: number;
  /**
   * The rate at which that cost would keep every core busy: no run on this machine can go faster with this build,
   * however the work is spread over processes. An upper bound when a part is missing; null when none was measured.
   */
  cpuBoundMsgPerSec: number | null;
  /** Each measured part's share of `machineUsPerMessage`. */
  shares: Record<string, number>;
  /** Parts that were not measured (a server whose processes could not be read). */
  missing: string[];
}

/**
 * The machine's CPU per message and the throughput it allows, from the per-process figures of one run. A part's
 * replicas (`scheduler-2` beside `scheduler`, as the bench names them) count as that part.
 */
export function cpuBudget(usPerMessage: Readonly<Record<string, number>>, cores: number): CpuBudget {
  if (!(cores > 0)) throw new Error(`cpuBudget: cores must be positive, got ${cores}`);
  const byPart = new Map<string, number>();
  for (const [name, us] of Object.entries(usPerMessage)) {
    const part = BUDGET_PARTS.find((p) => p === name.replace(/-\d+$/, ''));
    if (part && Number.isFinite(us)) byPart.set(part, (byPart.get(part) ?? 0) + us);
  }
  const measured = BUDGET_PARTS.filter((part) => byPart.has(part));
  const total = measured.reduce((sum, part) => sum + byPart.get(part)!, 0);
  return {
    machineUsPerMessage: round(total),
    cpuBoundMsgPerSec: total > 0 ? round((cores * 1_000_000) / total) : null,
    shares: Object.fromEntries(measured.map((part) => [part, total > 0 ? round(byPart.get(part)! / total, 3) : 0])),
    missing: BUDGET_PARTS.filter((part) => !measured.includes(part)),
  };
}

/** The machine's CPU time so far in clock ticks (`/proc/stat`): busy (all but idle and iowait), and all of it. */
export interface MachineTicks {
  busy: number;
  total: number;
}

/** Reads `/proc/stat`'s aggregate `cpu` line: user nice system idle iowait irq softirq steal … (guest is in user). */
export function machineTicks(procStat: string): MachineTicks | undefined {
  const line = /^cpu\s+([\d\s]+)$/m.exec(procStat)?.[1];
  if (!line) return undefined;
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

/** The share of the machine's CPU time that was busy between two readings (0–1); undefined without both. */
export function busyShare(before: MachineTicks | undefined, after: MachineTicks | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  return round((after.busy - before.busy) / (after.total - before.total), 3);
}

/** The machine's CPU ticks so far; undefined where there is no `/proc/stat`. */
export function readMachineTicks(): MachineTicks | undefined {
  try {
    return machineTicks(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return undefined;
  }
}
