/**
 * A burst's leftovers in the native heap, for the specs of the trim (ADR 0043): `count` Buffers of `size` bytes
 * (small enough for glibc to carve them out of its arena rather than map them one by one), written so their pages
 * are resident, then all but one in `keepEvery` let go. The kept ones, returned, pin the arena, so glibc cannot
 * give the freed pages back by shrinking it from its end.
 */
export function nativeBurst(count: number, size: number, keepEvery: number): Buffer[] {
  const all: Buffer[] = [];
  for (let i = 0; i < count; i++) all.push(Buffer.allocUnsafeSlow(size).fill(i & 0xff));
  return all.filter((_, i) => i % keepEvery === 0);
}
