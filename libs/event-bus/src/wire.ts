/**
 * String arguments at least this long go to Redis as UTF-8 Buffers (`wireArg`). Envelope JSON (0.7–2 kB), group
 * state fields and held messages are above it; ids, keys, kinds and numbers stay strings.
 */
export const WIRE_BUFFER_MIN_CHARS = 256;

/**
 * A command argument as ioredis should get it. ioredis writes string arguments by concatenating every command of a
 * pipeline into one string, which V8 flattens when the socket write encodes it to UTF-8 — after `Buffer.byteLength`
 * has already walked each argument once — and one character above Latin-1 (Chinese text) widens the whole flattened
 * pipeline to two bytes a character. A Buffer argument is encoded once, here, and copied. `npm run bench -- wire`
 * (the bus's commit of an ambient message: a 2 kB envelope, a state field, the held message): 63–92 → 44–59 µs of
 * client CPU per commit (docs/adr/0042).
 */
export function wireArg(value: string | number): string | number | Buffer {
  return typeof value === 'string' && value.length >= WIRE_BUFFER_MIN_CHARS ? Buffer.from(value) : value;
}
