import { defaultGroups, generateTranscript, type TranscriptSpec } from './transcript.generator.js';
import { parseTranscript, toJsonLines } from './transcript.js';

const spec: TranscriptSpec = {
  seed: 3,
  selfId: '10001',
  botNames: ['林小满', '小满'],
  botNickname: '林小满',
  start: 1_777_000_000,
  minutes: 120,
  groups: defaultGroups(4),
  privateChats: 2,
};

type Seg = { type: string; data: Record<string, unknown> };
const segments = (e: Record<string, unknown>) => (Array.isArray(e.message) ? (e.message as Seg[]) : []);

describe('transcript generator', () => {
  const events = generateTranscript(spec);

  it('is reproducible from its seed and differs with another', () => {
    expect(generateTranscript(spec)).toEqual(events);
    expect(generateTranscript({ ...spec, seed: 4 })).not.toEqual(events);
  });

  it('writes JSON Lines in time order within the requested span, which the replay reads back', () => {
    const lines = parseTranscript(toJsonLines(events));
    expect(lines).toHaveLength(events.length);
    expect(lines[0]!.time).toBeGreaterThanOrEqual(spec.start);
    expect(lines[lines.length - 1]!.time).toBeLessThan(spec.start + spec.minutes * 60);
  });

  it('gives groups different tempos: the busy group talks far more than a quiet one', () => {
    const perGroup = (id: string) =>
      events.filter((e) => String(e.group_id) === id && e.post_type === 'message').length;
    const [busy, normal, quiet] = spec.groups;
    expect(perGroup(busy!.groupId)).toBeGreaterThan(2 * perGroup(quiet!.groupId));
    expect(perGroup(normal!.groupId)).toBeGreaterThan(0);
  });

  it('contains every kind of traffic the economy needs', () => {
    const has = (predicate: (e: Record<string, unknown>) => boolean) => events.some(predicate);
    const selfAt = (e: Record<string, unknown>) =>
      segments(e).some((s) => s.type === 'at' && s.data.qq === spec.selfId);
    expect(has((e) => e.post_type === 'message' && selfAt(e) && !segments(e).some((s) => s.type === 'reply'))).toBe(
      true,
    );
    expect(
      has(
        (e) =>
          segments(e).some((s) => s.type === 'text' && String(s.data.text).startsWith('小满')) ||
          segments(e).some((s) => s.type === 'text' && String(s.data.text).startsWith('林小满')),
      ),
    ).toBe(true);
    const botIds = new Set(events.filter((e) => e.post_type === 'message_sent').map((e) => String(e.message_id)));
    expect(botIds.size).toBeGreaterThan(0);
    expect(has((e) => segments(e).some((s) => s.type === 'reply' && botIds.has(String(s.data.id))))).toBe(true);
    expect(has((e) => e.message_type === 'private')).toBe(true);
    expect(has((e) => e.notice_type === 'group_recall')).toBe(true);
    for (const type of ['image', 'face', 'forward'])
      expect(has((e) => segments(e).some((s) => s.type === type))).toBe(true);
    expect(has((e) => segments(e).some((s) => s.type === 'text' && /^[/#.]/.test(String(s.data.text))))).toBe(true);
  });

  it('has floods and fragments: one sender, several messages within seconds', () => {
    const bursts = new Map<string, number[]>();
    for (const e of events) {
      if (e.message_type !== 'group') continue;
      const key = `${String(e.group_id)} ${String(e.user_id)}`;
      bursts.set(key, [...(bursts.get(key) ?? []), e.time as number]);
    }
    const longest = Math.max(
      ...[...bursts.values()].map((times) => {
        let best = 1;
        for (let i = 0; i < times.length; i++) {
          let j = i;
          while (j + 1 < times.length && times[j + 1]! - times[i]! <= 10) j++;
          best = Math.max(best, j - i + 1);
        }
        return best;
      }),
    );
    expect(longest).toBeGreaterThanOrEqual(8);
  });

  it('refuses a transcript with a broken line, naming it', () => {
    expect(() => parseTranscript('{"time":1}\nnot json\n')).toThrow(/:2 is not JSON/);
    expect(() => parseTranscript('{"time":2}\n{"time":1}\n')).toThrow(/:2 goes back in time/);
    expect(() => parseTranscript('{"post_type":"message"}\n')).toThrow(/no numeric "time"/);
  });
});
