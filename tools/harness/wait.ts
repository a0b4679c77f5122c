import { setTimeout as sleep } from 'node:timers/promises';

/** Poll until `probe` yields a value or `timeoutMs` passes (then throws naming `what`, with `context()`). */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  context: () => string = () => '',
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${context()}`);
    await sleep(intervalMs);
  }
}

/**
 * Wait until `signature()` (a string summarising progress: row counts, sends…) stays the same for `quietMs`, up to
 * `timeoutMs`. Returns whether it settled; a harness reports figures either way, and says which.
 */
export async function quiescence(
  signature: () => Promise<string>,
  quietMs: number,
  timeoutMs: number,
  intervalMs = 1000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let last = await signature();
  let since = Date.now();
  while (Date.now() < deadline) {
    await sleep(intervalMs);
    const now = await signature();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return true;
  }
  return false;
}

/** Resident set size of a process in MB from /proc (Linux), or NaN. */
export async function rssMb(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  try {
    const { readFile } = await import('node:fs/promises');
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb === undefined ? Number.NaN : Math.round((Number(kb) / 1024) * 10) / 10;
  } catch {
    return Number.NaN;
  }
}
