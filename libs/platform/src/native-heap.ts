/**
 * glibc's `malloc_trim`, reached through koffi (ADR 0043). The native heap — Buffers' backing stores, socket reads,
 * native modules' own allocations — is glibc's, and after a burst its arenas keep the pages of what was freed
 * whenever a live allocation sits above them: the memory is free for the process but still resident. `malloc_trim(0)`
 * hands every whole free page of every arena back to the kernel.
 *
 * Where there is no glibc (musl, macOS, Windows) or koffi cannot load, there is nothing to call: `bindNativeHeapTrim`
 * says why, and the caller goes on without it.
 */

/** Gives free native heap pages back; true when glibc released any. */
export type NativeHeapTrim = () => boolean;

export type NativeHeapTrimBinding = { trim: NativeHeapTrim } | { unavailable: string };

let binding: Promise<NativeHeapTrimBinding> | undefined;

/** Binds `malloc_trim` once per thread (koffi loads on first use, not when an app starts). */
export function bindNativeHeapTrim(): Promise<NativeHeapTrimBinding> {
  binding ??= bind();
  return binding;
}

/** Whether this process runs on glibc, as Node's own diagnostic report says (building it takes milliseconds). */
export function onGlibc(): boolean {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return Boolean(report?.header?.glibcVersionRuntime);
}

async function bind(): Promise<NativeHeapTrimBinding> {
  if (!onGlibc()) return { unavailable: `the C library on ${process.platform} is not glibc` };
  try {
    const koffi = (await import('koffi')).default;
    const libc = koffi.load('libc.so.6');
    const trim = libc.func('int malloc_trim(size_t pad)') as (pad: number) => number;
    return { trim: () => trim(0) === 1 };
  } catch (error) {
    return { unavailable: error instanceof Error ? error.message : String(error) };
  }
}
