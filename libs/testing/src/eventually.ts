import { setTimeout as delay } from 'node:timers/promises';

/**
 * Poll `probe` every `intervalMs` until it returns something other than undefined/false, or fail after `timeoutMs`
 * naming `what`.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(intervalMs);
  }
}
