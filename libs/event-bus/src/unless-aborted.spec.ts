import { exposedGc } from '@app/testing';
import { unlessAborted } from './unless-aborted.js';

const gc = exposedGc();

/** Whether what `wait` resolved to is still reachable after the wait, while the stop signal lives on. */
async function keptAfter(wait: (work: Promise<object>) => Promise<unknown>): Promise<boolean> {
  let result: WeakRef<object> | undefined;
  await (async () => {
    const payload = { body: 'x'.repeat(1000) };
    result = new WeakRef(payload);
    await wait(Promise.resolve(payload));
  })();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return result!.deref() !== undefined;
}

describe('unlessAborted', () => {
  it("resolves to the work's result, or null once the signal aborts", async () => {
    const stopping = new AbortController();
    await expect(unlessAborted(Promise.resolve(7), stopping.signal)).resolves.toBe(7);
    const never = new Promise<number>(() => undefined);
    const waiting = unlessAborted(never, stopping.signal);
    stopping.abort();
    await expect(waiting).resolves.toBeNull();
    await expect(unlessAborted(Promise.resolve(7), stopping.signal)).resolves.toBeNull();
  });

  it("passes the work's failure on", async () => {
    await expect(unlessAborted(Promise.reject(new Error('down')), new AbortController().signal)).rejects.toThrow(
      'down',
    );
  });

  it('keeps nothing alive on a signal that outlives the wait', async () => {
    const stopping = new AbortController();
    expect(await keptAfter((work) => unlessAborted(work, stopping.signal))).toBe(false);
    // What it replaces: a race with a promise that settles only at stop keeps every result until then.
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    expect(await keptAfter((work) => Promise.race([work, stopped.then(() => null)]))).toBe(true);
    stop();
    stopping.abort();
  });
});
