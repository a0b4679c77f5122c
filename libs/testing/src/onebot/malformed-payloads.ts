import { napcatGroupMessage, napcatPoke, napcatRecall } from './napcat-events.js';

/** One generated input: the exact text sent, and whether it is a valid message that must arrive. */
export interface FuzzCase {
  raw: string;
  /** A valid, unique group message (text `fuzz-valid-<n>` in `FUZZ_VALID_GROUP`) interleaved with the junk. */
  valid: boolean;
}

export const FUZZ_VALID_GROUP = '39999';

/** A small deterministic PRNG (mulberry32): the same seed gives the same cases on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const JUNK: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  2 ** 60,
  -(2 ** 53),
  '',
  ' ',
  'abc',
  '12abc',
  '-0',
  '\u0000',
  '🙂',
  '[CQ:at,qq=',
  [],
  [1, 2, 3],
  {},
  { type: 'text' },
  { data: {} },
  'x'.repeat(300),
  '__proto__',
];

function deep(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

function baseEvents(n: number): Record<string, unknown>[] {
  return [
    napcatGroupMessage({
      selfId: '10001',
      groupId: '30090',
      userId: '20001',
      nickname: 'Alice',
      text: `文本${n}`,
      messageId: 1_000_000 + n,
    }),
    napcatGroupMessage({
      selfId: '10001',
      groupId: '30091',
      userId: '20002',
      nickname: 'Bob',
      text: `@${n}`,
      atSelf: true,
      messageId: 2_000_000 + n,
    }),
    napcatRecall({ selfId: '10001', groupId: '30092', userId: '20003', messageId: 3_000_000 + n }),
    napcatPoke({ selfId: '10001', groupId: '30093', userId: '20004', targetId: '10001' }),
    {
      time: 1_700_000_000 + n,
      self_id: 10001,
      post_type: 'meta_event',
      meta_event_type: 'heartbeat',
      status: { online: true },
      interval: 30_000,
    },
    {
      time: 1_700_000_000 + n,
      self_id: 10001,
      post_type: 'request',
      request_type: 'friend',
      user_id: 20005,
      comment: 'hi',
      flag: `f${n}`,
    },
    {
      time: 1_700_000_000 + n,
      self_id: 10001,
      post_type: 'notice',
      notice_type: 'group_ban',
      sub_type: 'ban',
      group_id: 30094,
      user_id: 20006,
      operator_id: 20007,
      duration: 60,
    },
  ];
}

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)]!;
}

/** One mutation of a valid event into something an implementation (or an attacker) might send. */
function mutate(random: () => number, event: Record<string, unknown>, n: number): string {
  const clone = JSON.parse(JSON.stringify(event)) as Record<string, unknown>;
  const keys = Object.keys(clone);
  switch (Math.floor(random() * 14)) {
    case 0:
      delete clone[pick(random, keys)];
      break;
    case 1:
    case 2:
      clone[pick(random, keys)] = pick(random, JUNK);
      break;
    case 3:
      clone.message = pick(random, [
        42,
        'plain [CQ:face,id=1',
        { type: 5 },
        [null],
        [{ type: 'text', data: 'x' }],
        [{ type: '', data: {} }],
      ]);
      break;
    case 4:
      clone.message = Array.from({ length: 201 + Math.floor(random() * 50) }, () => ({
        type: 'text',
        data: { text: 'a' },
      }));
      break;
    case 5:
      clone.message = [{ type: 'text', data: { text: '长'.repeat(20_001) } }];
      break;
    case 6:
      clone.message = [{ type: 'image', data: { file: deep(50 + Math.floor(random() * 150)) } }];
      break;
    case 7:
      clone.post_type = pick(random, ['messages', 'Message', '', 7, null, 'meta']);
      break;
    case 8:
      clone.message_type = pick(random, ['guild', '', 0, null, 'GROUP']);
      break;
    case 9:
      return pick(random, [
        '',
        '{',
        '{"post_type":',
        'null',
        '[]',
        '"text"',
        '1e999',
        '\ufeff{}',
        'undefined',
        '{"a":1,}',
        '\u0000',
        'NaN',
      ]);
    case 10:
      return JSON.stringify(clone).slice(0, Math.max(1, Math.floor(random() * 60)));
    case 11:
      return `{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},"post_type":"message","n":${n}}`;
    case 12:
      clone.sender = pick(random, ['Alice', 5, [], { user_id: 'x', role: { a: 1 } }]);
      break;
    default:
      clone.self_id = pick(random, [-5, 'abc', 1.25, '', null, 2 ** 70]);
      break;
  }
  return JSON.stringify(clone);
}

/**
 * `count` inputs that must each be answered without a crash: mostly malformed (missing and mistyped fields, junk
 * segments, over-limit messages, truncated and non-JSON text, deep nesting, prototype keys), with a valid unique
 * group message every 10th so a test can check that good input interleaved with bad all arrives.
 */
export function* malformedPayloads(seed: number, count: number): Generator<FuzzCase> {
  const random = prng(seed);
  for (let n = 0; n < count; n++) {
    if (n % 10 === 9) {
      const valid = napcatGroupMessage({
        selfId: '10001',
        groupId: FUZZ_VALID_GROUP,
        userId: '20009',
        nickname: 'Valid',
        text: `fuzz-valid-${seed}-${n}`,
        messageId: 100_000_000 + seed * 100_000 + n,
      });
      yield { raw: JSON.stringify(valid), valid: true };
      continue;
    }
    const base = pick(random, baseEvents(seed * 100_000 + n));
    yield { raw: mutate(random, base, n), valid: false };
  }
}
