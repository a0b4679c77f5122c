/** Waiting for HTTP endpoints to answer, as a person would check them in a browser. */
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 500;

/** What `url` answers right now: `{ ok }` for a 2xx, else what went wrong ("HTTP 503", "no answer"). */
export async function check(url) {
  try {
    const response = await globalThis.fetch(url, { signal: globalThis.AbortSignal.timeout(2000) });
    await response.body?.cancel();
    return response.ok ? { ok: true } : { ok: false, problem: `HTTP ${response.status}` };
  } catch {
    return { ok: false, problem: 'no answer' };
  }
}

/**
 * Poll every target until all answer 2xx, the deadline passes, or `shouldStop()` says to give up.
 * Resolves with a map from each target that never got healthy to its last problem (empty when all did).
 */
export async function waitForAll(targets, { timeoutMs, shouldStop }) {
  const pending = new Map(targets.map((target) => [target.name, { url: target.url, problem: 'no answer' }]));
  const deadline = Date.now() + timeoutMs;
  while (pending.size > 0 && Date.now() < deadline && !shouldStop()) {
    await Promise.all(
      [...pending].map(async ([name, entry]) => {
        const result = await check(entry.url);
        if (result.ok) pending.delete(name);
        else entry.problem = result.problem;
      }),
    );
    if (pending.size > 0) await sleep(POLL_MS);
  }
  return new Map([...pending].map(([name, entry]) => [name, entry.problem]));
}
