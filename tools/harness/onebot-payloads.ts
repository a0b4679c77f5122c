import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fc from 'fast-check';
import { REPO_ROOT } from '@app/testing';

/** Event fixtures (what implementations post), by folder: message-group, notice, meta … (API calls left out). */
export const EVENT_FIXTURE_FOLDERS = [
  'message-group',
  'message-private',
  'message-sent',
  'notice',
  'request',
  'meta',
] as const;

export interface Fixture {
  name: string;
  event: Record<string, unknown>;
}

export function loadEventFixtures(root = join(REPO_ROOT, 'test/fixtures/onebot')): Fixture[] {
  const fixtures: Fixture[] = [];
  for (const folder of EVENT_FIXTURE_FOLDERS) {
    for (const file of readdirSync(join(root, folder)).sort()) {
      if (!file.endsWith('.json')) continue;
      fixtures.push({
        name: `${folder}/${file}`,
        event: JSON.parse(readFileSync(join(root, folder, file), 'utf8')) as Record<string, unknown>,
      });
    }
  }
  if (fixtures.length === 0) throw new Error(`no OneBot event fixtures under ${root}`);
  return fixtures;
}

/** How a fuzz payload was made, so a surprising answer can be traced back to its recipe. */
export type PayloadFamily = 'valid' | 'mutated' | 'segments' | 'cq' | 'random-json' | 'broken-text' | 'oversize';

export interface FuzzPayload {
  family: PayloadFamily;
  fixture?: string;
  /** The exact body / frame text to send. */
  body: string;
  /** Sent with wrong credentials (HTTP only: a bad token or signature must be refused, structured). */
  badCredentials?: 'token' | 'signature';
}

export interface PayloadContext {
  fixtures: Fixture[];
  selfId: string;
  /** Hands out message ids no earlier payload used, so valid messages are not deduplicated away. */
  nextMessageId: () => number;
}

type Json = unknown;
type Path = (string | number)[];

function paths(value: Json, prefix: Path = [], out: Path[] = []): Path[] {
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const path = [...prefix, Array.isArray(value) ? Number(key) : key];
      out.push(path);
      paths(child, path, out);
    }
  }
  return out;
}

function setAt(root: Record<string, unknown>, path: Path, value: unknown): void {
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value === DELETE) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else {
    node[last] = value;
  }
}

const DELETE = Symbol('delete');

const SEGMENT_TYPES = [
  'text',
  'at',
  'reply',
  'face',
  'image',
  'record',
  'video',
  'file',
  'forward',
  'node',
  'json',
  'xml',
  'poke',
  'mface',
  'dice',
  'rps',
  'markdown',
  'contact',
  'location',
  'music',
];

/** Values that break naive code: wrong types, edge numbers, hostile strings, prototype keys, deep nesting. */
const hostile: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    2 ** 31,
    2 ** 53 + 2,
    -(2 ** 63),
    1e308,
    '',
    ' ',
    '0',
    '-1',
    '1e309',
    'NaN',
    '\u0000',
    '\ud800',
    '[CQ:at,qq=',
    '__proto__',
    'constructor',
    [],
    {},
    [[[[[[[[[[[]]]]]]]]]]],
  ),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
  fc.dictionary(
    fc.constantFrom('__proto__', 'constructor', 'type', 'data', 'qq', 'id', 'text'),
    fc.jsonValue({ maxDepth: 2 }),
    {
      maxKeys: 4,
    },
  ),
  fc.string({ maxLength: 3000 }),
);

const segment: fc.Arbitrary<Json> = fc.oneof(
  fc.record({
    type: fc.oneof(fc.constantFrom(...SEGMENT_TYPES), fc.string({ maxLength: 12 })),
    data: fc.dictionary(fc.constantFrom('text', 'qq', 'id', 'file', 'url', 'data', 'content', 'name'), hostile, {
      maxKeys: 4,
    }),
  }),
  hostile,
);

const cqCode: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.string({ maxLength: 20 }),
      fc
        .tuple(
          fc.oneof(fc.constantFrom(...SEGMENT_TYPES), fc.string({ maxLength: 8 })),
          fc.array(fc.tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 20 })), { maxLength: 3 }),
          fc.boolean(),
        )
        .map(
          ([type, params, closed]) => `[CQ:${type}${params.map(([k, v]) => `,${k}=${v}`).join('')}${closed ? ']' : ''}`,
        ),
      fc.constantFrom('&#91;', '&#93;', '&amp;', '&#44;', '[CQ:', ']', '[', '&'),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(''));

type Mutation =
  { kind: 'delete'; at: number } | { kind: 'set'; at: number; value: Json } | { kind: 'top'; key: string; value: Json };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: hostile }),
  fc.record({
    kind: fc.constant('top' as const),
    key: fc.constantFrom(
      'post_type',
      'message_type',
      'self_id',
      'user_id',
      'group_id',
      'message_id',
      'time',
      'message',
      'sender',
      'notice_type',
      'sub_type',
    ),
    value: hostile,
  }),
);

function fresh(context: PayloadContext, fixture: Fixture): Record<string, unknown> {
  const event = structuredClone(fixture.event);
  event.self_id = Number(context.selfId);
  if ('message_id' in event && (event.post_type === 'message' || event.post_type === 'message_sent')) {
    const id = context.nextMessageId();
    event.message_id = id;
    if ('message_seq' in event) event.message_seq = id;
    if ('real_id' in event) event.real_id = id;
  }
  return event;
}

/**
 * One generated or mutated OneBot payload. Families: fixtures made fresh (valid), fixtures with 1–4 mutations
 * (a field deleted, set to a hostile value, a top-level key replaced), random segment arrays, random CQ strings,
 * arbitrary JSON, broken text (truncated JSON, binary, deep nesting) and, rarely, an oversized body.
 */
export function payloadArbitrary(context: PayloadContext): fc.Arbitrary<FuzzPayload> {
  const fixtureIndex = fc.nat({ max: context.fixtures.length - 1 });
  const valid = fixtureIndex.map((i): FuzzPayload => {
    const fixture = context.fixtures[i]!;
    return { family: 'valid', fixture: fixture.name, body: JSON.stringify(fresh(context, fixture)) };
  });
  const mutated = fc
    .tuple(fixtureIndex, fc.array(mutation, { minLength: 1, maxLength: 4 }))
    .map(([i, mutations]): FuzzPayload => {
      const fixture = context.fixtures[i]!;
      const event = fresh(context, fixture);
      for (const m of mutations) {
        if (m.kind === 'top') {
          event[m.key] = m.value;
          continue;
        }
        const all = paths(event);
        if (all.length === 0) continue;
        setAt(event, all[m.at % all.length]!, m.kind === 'delete' ? DELETE : m.value);
      }
      return { family: 'mutated', fixture: fixture.name, body: JSON.stringify(event) };
    });
  const messageFixtures = context.fixtures.filter((f) => f.event.post_type === 'message');
  const messageIndex = fc.nat({ max: Math.max(0, messageFixtures.length - 1) });
  const segments = fc.tuple(messageIndex, fc.array(segment, { maxLength: 12 })).map(([i, message]): FuzzPayload => {
    const event = fresh(context, messageFixtures[i]!);
    event.message = message;
    return { family: 'segments', fixture: messageFixtures[i]!.name, body: JSON.stringify(event) };
  });
  const cq = fc.tuple(messageIndex, cqCode).map(([i, text]): FuzzPayload => {
    const event = fresh(context, messageFixtures[i]!);
    event.message = text;
    event.raw_message = text;
    event.message_format = 'string';
    return { family: 'cq', fixture: messageFixtures[i]!.name, body: JSON.stringify(event) };
  });
  const randomJson = fc
    .jsonValue({ maxDepth: 4 })
    .map((value): FuzzPayload => ({ family: 'random-json', body: JSON.stringify(value) ?? 'null' }));
  const brokenText = fc
    .oneof(
      fc.tuple(valid, fc.nat()).map(([p, cut]) => p.body.slice(0, cut % Math.max(1, p.body.length))),
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.nat({ max: 20_000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
      fc.nat({ max: 20_000 }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
      fc.constantFrom('', ' ', 'null', '[]', '"message"', '\ufeff{}', '{"post_type":"message"}', '{}{}', 'NaN'),
    )
    .map((body): FuzzPayload => ({ family: 'broken-text', body }));
  const oversize = fc
    .tuple(messageIndex, fc.integer({ min: 1_100_000, max: 1_500_000 }))
    .map(([i, size]): FuzzPayload => {
      const event = fresh(context, messageFixtures[i]!);
      event.message = [{ type: 'text', data: { text: '大'.repeat(Math.floor(size / 3)) } }];
      return { family: 'oversize', fixture: messageFixtures[i]!.name, body: JSON.stringify(event) };
    });
  return fc.oneof(
    { arbitrary: valid, weight: 300 },
    { arbitrary: mutated, weight: 800 },
    { arbitrary: segments, weight: 300 },
    { arbitrary: cq, weight: 200 },
    { arbitrary: randomJson, weight: 200 },
    { arbitrary: brokenText, weight: 200 },
    { arbitrary: oversize, weight: 1 },
  );
}

/** `count` payloads, reproducible from `seed`; a share of them sent with bad credentials when `credentials`. */
export function samplePayloads(
  context: PayloadContext,
  count: number,
  seed: number,
  options: { credentials?: boolean } = {},
): FuzzPayload[] {
  const arbitrary = options.credentials
    ? fc
        .tuple(payloadArbitrary(context), fc.nat({ max: 99 }))
        .map(([payload, roll]): FuzzPayload =>
          roll === 0
            ? { ...payload, badCredentials: 'token' }
            : roll === 1
              ? { ...payload, badCredentials: 'signature' }
              : payload,
        )
    : payloadArbitrary(context);
  return fc.sample(arbitrary, { numRuns: count, seed });
}
