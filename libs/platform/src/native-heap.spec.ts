import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { nativeBurst } from './native-burst.fixture.js';
import { bindNativeHeapTrim, onGlibc } from './native-heap.js';

const MB = 1024 * 1024;

/** A full collection now (the flag only has to be set before the function is fetched). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('bindNativeHeapTrim', () => {
  it('binds malloc_trim wherever the process runs on glibc, and says why not elsewhere', async () => {
    const binding = await bindNativeHeapTrim();
    if (onGlibc()) expect(binding).toHaveProperty('trim');
    else expect(binding).toHaveProperty('unavailable', expect.any(String));
    // Bound once: the second call hands out the same binding.
    expect(await bindNativeHeapTrim()).toBe(binding);
  });

  it('gives back to the kernel the resident pages of native memory a burst freed', async () => {
    const binding = await bindNativeHeapTrim();
    if (!('trim' in binding)) {
      expect(onGlibc()).toBe(false);
      return;
    }
    const kept = nativeBurst(16_000, 16 * 1024, 16);
    collect();
    // V8 frees the dropped Buffers' memory from the collection's sweeper; give it a moment.
    await sleep(500);
    collect();
    const before = process.memoryUsage.rss();
    expect(binding.trim()).toBe(true);
    const after = process.memoryUsage.rss();
    // 15 of every 16 Buffers (≈ 235 MB) were freed; at least 100 MB of it was still resident and is not now.
    expect(before - after).toBeGreaterThan(100 * MB);
    expect(kept.every((b, i) => b[0] === ((i * 16) & 0xff))).toBe(true); // what was live is intact
    // A quarter of a gigabyte allocated, two full collections and a trim: seconds on a loaded two-core machine.
  }, 30_000);
});
