import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { bindNativeHeapTrim, onGlibc } from './native-heap.js';

const MB = 1024 * 1024;

/** A full collection now (the flag only has to be set before the function is fetched). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/**
 * A burst's leftovers in the native heap: `count` Buffers of `size` bytes (small enough for glibc to carve them out
 * of its arena rather than map them one by one), written so their pages are resident, then all but one in `keepEvery`
 * let go — the kept ones pin the arena, so glibc cannot give the freed pages back by shrinking it.
 */
function fragment(count: number, size: number, keepEvery: number): Buffer[] {
  const all: Buffer[] = [];
  for (let i = 0; i < count; i++) all.push(Buffer.allocUnsafeSlow(size).fill(i & 0xff));
  return all.filter((_, i) => i % keepEvery === 0);
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
    const kept = fragment(16_000, 16 * 1024, 16);
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
  });
});
