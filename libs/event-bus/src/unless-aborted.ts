/**
 * `work`'s result, or null as soon as `signal` aborts, leaving nothing attached to the signal once `work` settles.
 *
 * A loop that waits with `Promise.race([work, stopped])` on a promise that settles only at stop keeps every
 * earlier result alive until then: each race leaves a reaction on the long-lived promise, the reaction holds the
 * race's promise, and that holds what `work` resolved to (a stream reader's every reply, for as long as it runs).
 */
export function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise<T | null>((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
