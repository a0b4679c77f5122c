import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { envelopeErrors, EventKind, PRIORITY, type MessagePayload } from '@app/contracts';
import {
  eventFor,
  normaliseOneBotEvent,
  postTypeLabel,
  type Accepted,
  type AcceptedMessage,
  type Normalised,
  type NormaliserSettings,
} from './onebot-event.normaliser.js';
import { withDirectness } from './onebot-message.normaliser.js';

const FIXTURES = join(import.meta.dirname, '../../../../test/fixtures/onebot');

function listFixtures(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listFixtures(path);
    return entry.name.endsWith('.json') ? [relative(FIXTURES, path)] : [];
  });
}

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Record<string, unknown>;
}

const DEFAULTS: NormaliserSettings = {
  nicknames: [],
  groups: '*',
  otherBots: new Set(),
  commandPrefixes: [],
  maxTextChars: 4000,
  maxSegments: 200,
  maxTypedChars: 20_000,
};

function normalise(input: unknown, settings: Partial<NormaliserSettings> = {}): Normalised {
  return normaliseOneBotEvent(input, { ...DEFAULTS, ...settings });
}

function acceptedAny(input: unknown, settings: Partial<NormaliserSettings> = {}): Accepted {
  const result = normalise(input, settings);
  if (!('accept' in result)) throw new Error(`expected accept, got ${JSON.stringify(result)}`);
  return result.accept;
}

function accepted(input: unknown, settings: Partial<NormaliserSettings> = {}): AcceptedMessage {
  const result = acceptedAny(input, settings);
  if (result.kind !== EventKind.MessageObserved && result.kind !== EventKind.MessageDirect) {
    throw new Error(`expected a message, got ${result.kind}`);
  }
  return result;
}

function payloadOf(name: string, settings: Partial<NormaliserSettings> = {}): MessagePayload {
  return accepted(fixture(name), settings).payload;
}

/** Expected outcome of every fixture; a new fixture fails the suite until it is classified here. */
const OUTCOMES: Record<string, `accept:${string}` | `ignore:${string}` | `reject:${string}`> = {
  'api-request/get-forward-msg-spec-assembled.json': 'reject:post_type',
  'api-request/get-msg-351.json': 'reject:post_type',
  'api-request/http-body-cq-string-face-image-spec.json': 'reject:post_type',
  'api-request/send-group-forward-msg-1447.json': 'reject:post_type',
  'api-request/send-group-msg-string-1410.json': 'reject:post_type',
  'api-request/send-group-msg-text-face-385.json': 'reject:post_type',
  'api-request/send-private-msg-array-napcat.json': 'reject:post_type',
  'api-request/send-private-msg-typo-params-252.json': 'reject:post_type',
  'api-response/async-spec-derived.json': 'ignore:api_response',
  'api-response/delete-msg-failed-1200-1173.json': 'ignore:api_response',
  'api-response/delete-msg-ok-no-data-1051.json': 'ignore:api_response',
  'api-response/failed-1404-unsupported-api-252.json': 'ignore:api_response',
  'api-response/failed-200-http-timeout-600.json': 'ignore:api_response',
  'api-response/failed-400-http-validation-372.json': 'ignore:api_response',
  'api-response/failed-retcode100-gocq.json': 'ignore:api_response',
  'api-response/get-forward-msg-ok-spec-assembled.json': 'ignore:api_response',
  'api-response/get-msg-ok-recalled-empty-351.json': 'ignore:api_response',
  'api-response/send-group-forward-msg-ok-stream-1447.json': 'ignore:api_response',
  'api-response/send-group-msg-failed-1200-timeout-1410.json': 'ignore:api_response',
  'api-response/send-private-msg-failed-1200-napcat.json': 'ignore:api_response',
  'api-response/send-private-msg-ok-napcat.json': 'ignore:api_response',
  'message-group/anonymous-gocq.json': 'accept:message.observed',
  'message-group/at-only-with-group-name-napcat.json': 'accept:message.direct',
  'message-group/file-napcat.json': 'accept:message.observed',
  'message-group/forward-napcat.json': 'accept:message.observed',
  'message-group/mface-napcat.json': 'accept:message.observed',
  'message-group/nonebot-fixture-cq-string-atall.json': 'accept:message.observed',
  'message-group/reply-atall-at-images-napcat.json': 'accept:message.observed',
  'message-group/shake-napcat.json': 'accept:message.observed',
  'message-group/string-format-face-negative-id-napcat.json': 'accept:message.observed',
  'message-group/text-napcat.json': 'accept:message.observed',
  'message-private/face-with-raw-napcat.json': 'accept:message.direct',
  'message-private/file-napcat.json': 'accept:message.direct',
  'message-private/json-miniapp-share-napcat.json': 'accept:message.direct',
  'message-private/reply-napcat.json': 'accept:message.direct',
  'message-private/spec-http-post-private-string.json': 'accept:message.direct',
  'message-private/text-array-napcat.json': 'accept:message.direct',
  'message-private/text-image-text-napcat.json': 'accept:message.direct',
  'message-private/text-string-format-escaped-napcat.json': 'accept:message.direct',
  'message-private/video-napcat.json': 'accept:message.direct',
  'message-sent/group-at-with-name-napcat.json': 'accept:message.echoed',
  'message-sent/private-file-target0-napcat.json': 'accept:message.echoed',
  'meta/heartbeat-napcat.json': 'ignore:meta_event',
  'meta/lifecycle-connect-napcat.json': 'ignore:meta_event',
  'notice/essence-add-napcat.json': 'accept:notice.received',
  'notice/friend-add-napcat.json': 'accept:notice.received',
  'notice/group-admin-set-napcat.json': 'accept:notice.received',
  'notice/group-ban-gocq.json': 'accept:notice.received',
  'notice/group-card-napcat.json': 'accept:notice.received',
  'notice/group-decrease-kick-operator0-napcat.json': 'accept:notice.received',
  'notice/group-decrease-leave-disband-gocq.json': 'accept:notice.received',
  'notice/group-increase-approve-gocq.json': 'accept:notice.received',
  'notice/group-msg-emoji-like-napcat-doc.json': 'accept:notice.received',
  'notice/group-recall-napcat.json': 'accept:message.recalled',
  'notice/group-upload-napcat.json': 'accept:notice.received',
  'notice/poke-group-gocq.json': 'accept:message.direct',
  'notice/poke-group-target0-napcat.json': 'accept:message.direct',
  'request/friend-napcat.json': 'accept:request.received',
  'request/group-add-user0-napcat.json': 'accept:request.received',
  'request/group-invite-gocq.json': 'accept:request.received',
};

function outcomeOf(result: Normalised): string {
  if ('accept' in result) return `accept:${result.accept.kind}`;
  if ('ignore' in result) return `ignore:${result.ignore}`;
  return `reject:${result.reject.field}`;
}

describe('OneBot event normaliser: every fixture', () => {
  const files = listFixtures(FIXTURES).sort();

  it('has an expected outcome for every fixture file, and no stale entries', () => {
    expect(files.length).toBeGreaterThanOrEqual(60);
    expect(files).toEqual(Object.keys(OUTCOMES).sort());
  });

  it.each(files)('%s', (name) => {
    const result = normalise(fixture(name));
    expect(outcomeOf(result)).toBe(OUTCOMES[name]);
    if ('accept' in result) {
      // Whatever the implementation sent, the event is a valid envelope and every data value is a string.
      expect(envelopeErrors(eventFor(result.accept, new Date()))).toEqual([]);
      const payload = result.accept.payload as { segments?: { data: Record<string, unknown> }[] };
      for (const segment of payload.segments ?? []) {
        for (const value of Object.values(segment.data)) expect(typeof value).toBe('string');
      }
    }
  });
});

describe('OneBot event normaliser: what a message becomes', () => {
  it('NapCat group text: ids as strings, sender, observed, dedup key', () => {
    const message = accepted(fixture('message-group/text-napcat.json'));
    expect(message.kind).toBe(EventKind.MessageObserved);
    expect(message.groupId).toBe('30001');
    expect(message.userId).toBe('20001');
    expect(message.dedupKey).toBe('10001:30001:2096329721');
    expect(message.payload).toEqual({
      messageType: 'group',
      selfId: '10001',
      messageId: '2096329721',
      sender: { userId: '20001', nickname: 'Alice', card: '', displayName: 'Alice', role: 'admin' },
      segments: [{ type: 'text', data: { text: 'test' } }],
      text: 'test',
      truncated: false,
      mentionsSelf: false,
      sentAt: 1747107314,
    });
  });

  it('an @ of the bot alone (with NapCat’s trailing " " text) is direct, and keeps the group name', () => {
    const message = accepted(fixture('message-group/at-only-with-group-name-napcat.json'));
    expect(message.kind).toBe(EventKind.MessageDirect);
    expect(message.payload.directReason).toBe('at');
    expect(message.payload.mentionsSelf).toBe(true);
    expect(message.payload.text).toBe('@10008');
    expect(message.payload.segments).toEqual([
      { type: 'at', data: { qq: '10008' } },
      { type: 'text', data: { text: ' ' } },
    ]);
    expect(message.payload.groupName).toBe('Test Group A');
    expect(message.payload.sender).toEqual({
      userId: '20017',
      nickname: '￴',
      card: '',
      displayName: '￴',
      role: 'owner',
    });
  });

  it('uses QUNLI_SELF_ID to recognise an @ of the bot', () => {
    const event = fixture('message-group/at-only-with-group-name-napcat.json');
    expect(accepted(event, { selfId: '10008' }).payload.directReason).toBe('at');
    const other = { ...event, message: [{ type: 'at', data: { qq: '20002' } }] };
    expect(accepted(other, { selfId: '10008' }).kind).toBe(EventKind.MessageObserved);
  });

  it('negative int32 message ids (NapCat) survive as strings; CQ-string faces render as [表情]', () => {
    const message = accepted(fixture('message-group/string-format-face-negative-id-napcat.json'));
    expect(message.payload.messageId).toBe('-2147483416');
    expect(message.dedupKey).toBe('10011:30013:-2147483416');
    expect(message.payload.segments).toEqual([
      { type: 'text', data: { text: '复读机' } },
      { type: 'face', data: { id: '120' } },
    ]);
    expect(message.payload.text).toBe('复读机[表情]');
    expect(message.payload.sender.displayName).toBe('IvanCard');
  });

  it('decodes CQ-escaped brackets in the string format without inventing segments', () => {
    const payload = payloadOf('message-private/text-string-format-escaped-napcat.json');
    expect(payload.segments).toEqual([{ type: 'text', data: { text: '!info [CQ:qq=123,name=[]' } }]);
    expect(payload.text).toBe('!info [CQ:qq=123,name=[]');
  });

  it('CQ string @全体成员 (nonebot fixture, self_id 0) is observed, not direct', () => {
    const message = accepted(fixture('message-group/nonebot-fixture-cq-string-atall.json'));
    expect(message.kind).toBe(EventKind.MessageObserved);
    expect(message.payload.mentionsSelf).toBe(false);
    expect(message.payload.selfId).toBe('0');
    expect(message.payload.segments).toEqual([
      { type: 'at', data: { qq: 'all' } },
      { type: 'text', data: { text: ' Test text' } },
    ]);
    expect(message.payload.text).toBe('@全体成员 Test text');
    expect(message.payload.sender.role).toBe('unknown');
  });

  it('reply, @all, @someone, photo and sticker', () => {
    const payload = payloadOf('message-group/reply-atall-at-images-napcat.json');
    expect(payload.replyToMessageId).toBe('265662236');
    expect(payload.text).toBe('@全体成员 test message@20002[图片][动画表情]');
    expect(payload.segments[4]?.data.sub_type).toBe('0');
    expect(payload.segments[5]?.data.sub_type).toBe('1');
    expect(payload.segments[4]?.data.url).toContain('&fileid=');
  });

  it('anonymous go-cqhttp members show under their alias', () => {
    const message = accepted(fixture('message-group/anonymous-gocq.json'));
    expect(message.userId).toBe('80000000');
    expect(message.payload.sender.displayName).toBe('嫦娥');
    expect(message.payload.sender.nickname).toBe('匿名消息');
    expect(message.payload.text).toBe('asdf');
    expect(message.groupId).toBe('30017');
  });

  it('renders files, forwards, mface, shake, video, json cards', () => {
    expect(payloadOf('message-group/file-napcat.json').text).toBe('[文件:QQ20260829-154116.mp4]');
    expect(payloadOf('message-group/file-napcat.json').sender.displayName).toBe('[有人@我]Erin');
    expect(payloadOf('message-group/forward-napcat.json').text).toBe('[转发消息]');
    expect(payloadOf('message-group/forward-napcat.json').segments[0]?.data.id).toBe('7505442611578883339');
    const mface = payloadOf('message-group/mface-napcat.json');
    expect(mface.text).toBe('[摸头]');
    expect(mface.segments[0]?.data.emoji_package_id).toBe('244959');
    const shake = payloadOf('message-group/shake-napcat.json');
    expect(shake.text).toBe('[戳一戳]');
    expect(shake.sender.displayName).toBe('Frank');
    expect(shake.groupName).toBe('Test Group D');
    expect(payloadOf('message-private/video-napcat.json').text).toBe('[视频]');
    expect(payloadOf('message-private/file-napcat.json').text).toBe(
      '[文件:到底是谁发明的外包？！ [BV147G1zQEri_p1].mp4]',
    );
    expect(payloadOf('message-private/json-miniapp-share-napcat.json').text).toBe(
      '[QQ小程序]【PARA2.0】笔记以行动成果组织，告别无效记录obsidian|Notion通用',
    );
    expect(payloadOf('message-private/text-image-text-napcat.json').text).toBe('哈哈[图片]啊啊');
  });

  it('private messages are direct, in the private:<user> conversation', () => {
    const message = accepted(fixture('message-private/reply-napcat.json'));
    expect(message.kind).toBe(EventKind.MessageDirect);
    expect(message.groupId).toBe('private:20001');
    expect(message.dedupKey).toBe('10001:private:20001:2127648876');
    expect(message.payload.messageType).toBe('private');
    expect(message.payload.directReason).toBe('private');
    expect(message.payload.replyToMessageId).toBe('1136053690');
    expect(message.payload.text).toBe('aa');
    expect(message.payload.sender.role).toBe('unknown');
  });

  it('face data with a raw object of nulls becomes strings', () => {
    const payload = payloadOf('message-private/face-with-raw-napcat.json');
    expect(payload.text).toBe('👀[表情][表情]');
    const face = payload.segments[1]!;
    expect(face.data.id).toBe('311');
    expect(face.data.resultId).toBe('');
    expect(JSON.parse(face.data.raw!)).toMatchObject({ faceIndex: 311, faceText: '[打call]', packId: null });
  });

  it('the OneBot spec’s own HTTP POST example (string format, no message_format)', () => {
    const message = accepted(fixture('message-private/spec-http-post-private-string.json'));
    expect(message.payload.selfId).toBe('10001000');
    expect(message.payload.messageId).toBe('12');
    expect(message.payload.sender.displayName).toBe('小不点');
    expect(message.payload.text).toBe('你好～');
  });

  it('accepts ids sent as digit strings and a single segment object', () => {
    const event = {
      ...fixture('message-group/text-napcat.json'),
      group_id: '30001',
      user_id: '20001',
      message_id: '-5',
      message: { type: 'text', data: { text: 'hi' } },
    };
    const message = accepted(event);
    expect(message.groupId).toBe('30001');
    expect(message.payload.messageId).toBe('-5');
    expect(message.payload.text).toBe('hi');
  });

  it('keeps unknown segment types as-is and reports them', () => {
    const event = {
      ...fixture('message-group/text-napcat.json'),
      message: [
        { type: 'text', data: { text: 'look ' } },
        { type: 'flashtransfer', data: { fileSetId: 7, ok: true, extra: { a: 1 }, none: null } },
      ],
    };
    const message = accepted(event);
    expect(message.unknownSegmentTypes).toEqual(['flashtransfer']);
    expect(message.payload.segments[1]).toEqual({
      type: 'flashtransfer',
      data: { fileSetId: '7', ok: 'true', extra: '{"a":1}', none: '' },
    });
    expect(message.payload.text).toBe('look');
  });

  it('renders @ with the name NapCat gives, else the QQ number', () => {
    const event = {
      ...fixture('message-group/text-napcat.json'),
      message: [
        { type: 'at', data: { qq: '20006', name: 'Bob' } },
        { type: 'text', data: { text: ' 你好 ' } },
        { type: 'at', data: { qq: '20007' } },
      ],
    };
    expect(accepted(event).payload.text).toBe('@Bob 你好 @20007');
  });

  it('a nickname in the typed text makes a group message direct (case-insensitive)', () => {
    const event = { ...fixture('message-group/text-napcat.json'), message: 'QunLi 在吗' };
    const message = accepted(event, { nicknames: ['小群', 'qunli'] });
    expect(message.kind).toBe(EventKind.MessageDirect);
    expect(message.payload.directReason).toBe('name');
    expect(message.payload.mentionsSelf).toBe(false);
    expect(accepted(event, { nicknames: ['小群'] }).kind).toBe(EventKind.MessageObserved);
  });

  it('an @ beats a name when both are present', () => {
    const event = { ...fixture('message-group/text-napcat.json'), message: '[CQ:at,qq=10001] 小群 你好' };
    expect(accepted(event, { nicknames: ['小群'] }).payload.directReason).toBe('at');
  });

  it('cuts long text by characters (never inside an emoji) and marks it truncated, keeping segments whole', () => {
    const long = '😀'.repeat(150);
    const event = { ...fixture('message-group/text-napcat.json'), message: [{ type: 'text', data: { text: long } }] };
    const payload = accepted(event, { maxTextChars: 100 }).payload;
    expect(payload.truncated).toBe(true);
    expect(Array.from(payload.text)).toHaveLength(100);
    expect(payload.text).toBe('😀'.repeat(100));
    expect(payload.segments[0]?.data.text).toBe(long);
    expect(accepted(event, { maxTextChars: 150 }).payload.truncated).toBe(false);
  });

  it('trims the rendering', () => {
    const event = { ...fixture('message-group/text-napcat.json'), message: '  hi  ' };
    expect(accepted(event).payload.text).toBe('hi');
  });
});

describe('OneBot event normaliser: what is ignored', () => {
  it('message_sent (the bot’s own messages) is recorded as the bot’s, never as input', () => {
    const group = acceptedAny(fixture('message-sent/group-at-with-name-napcat.json'));
    expect(group.kind).toBe(EventKind.MessageEchoed);
    const lost = acceptedAny(fixture('message-sent/private-file-target0-napcat.json'));
    expect(lost).toMatchObject({ kind: EventKind.MessageEchoed, groupId: 'private:0' });
  });

  it('a message event from the bot’s own account is the bot’s too', () => {
    const event = { ...fixture('message-group/text-napcat.json'), user_id: 10001 };
    expect(acceptedAny(event)).toMatchObject({ kind: EventKind.MessageEchoed, groupId: '30001' });
  });

  it('heartbeat: ignored, with what it says about the connection', () => {
    expect(normalise(fixture('meta/heartbeat-napcat.json'))).toEqual({
      ignore: 'meta_event',
      signal: { type: 'heartbeat', selfId: '10001', time: 1746673666, online: true, good: true, intervalMs: 30000 },
    });
  });

  it('lifecycle connect: ignored, reports the account online', () => {
    expect(normalise(fixture('meta/lifecycle-connect-napcat.json'))).toEqual({
      ignore: 'meta_event',
      signal: { type: 'lifecycle', selfId: '10001', time: 1746673610, online: true },
    });
  });

  it('groups outside QUNLI_GROUPS; private chats are not group-filtered', () => {
    const groups = new Set(['30002']);
    expect(normalise(fixture('message-group/text-napcat.json'), { groups })).toEqual({ ignore: 'group_not_listed' });
    expect('accept' in normalise(fixture('message-group/text-napcat.json'), { groups: new Set(['30001']) })).toBe(true);
    expect('accept' in normalise(fixture('message-private/text-array-napcat.json'), { groups })).toBe(true);
  });

  it('events of another bot account when QUNLI_SELF_ID is set', () => {
    expect(normalise(fixture('message-group/text-napcat.json'), { selfId: '10002' })).toEqual({
      ignore: 'other_account',
    });
    expect(normalise(fixture('notice/group-ban-gocq.json'), { selfId: '10002' })).toEqual({ ignore: 'other_account' });
    expect('accept' in normalise(fixture('message-group/text-napcat.json'), { selfId: '10001' })).toBe(true);
  });

  it('message types other than group and private (guild channels)', () => {
    const event = { ...fixture('message-group/text-napcat.json'), message_type: 'guild' };
    expect(normalise(event)).toEqual({ ignore: 'unsupported_message_type' });
  });
});

describe('OneBot event normaliser: what is rejected, naming the field', () => {
  const base = fixture('message-group/text-napcat.json');
  const cases: [string, unknown, string][] = [
    ['not an object', [1, 2], '$'],
    ['null', null, '$'],
    ['no post_type', { ...base, post_type: undefined }, 'post_type'],
    ['unknown post_type', { ...base, post_type: 'messages' }, 'post_type'],
    ['group without group_id', { ...base, group_id: undefined }, 'group_id'],
    ['group_id as text', { ...base, group_id: 'abc' }, 'group_id'],
    ['negative user_id', { ...base, user_id: -3 }, 'user_id'],
    ['fractional message_id', { ...base, message_id: 1.5 }, 'message_id'],
    ['no self_id', { ...base, self_id: undefined }, 'self_id'],
    ['no time', { ...base, time: undefined }, 'time'],
    ['no message_type', { ...base, message_type: undefined }, 'message_type'],
    ['message as a number', { ...base, message: 42 }, 'message'],
    ['segment without type', { ...base, message: [{ type: 'text', data: {} }, { data: {} }] }, 'message[1].type'],
    ['segment data as text', { ...base, message: [{ type: 'text', data: 'hi' }] }, 'message[0].data'],
    ['segment as text', { ...base, message: ['hi'] }, 'message[0]'],
    ['sender as text', { ...base, sender: 'Alice' }, 'sender'],
    ['heartbeat without self_id', { ...fixture('meta/heartbeat-napcat.json'), self_id: undefined }, 'self_id'],
  ];

  it.each(cases)('%s', (_label, input, field) => {
    const result = normalise(JSON.parse(JSON.stringify(input)));
    expect(result).toEqual({ reject: { field, message: expect.any(String), reason: 'invalid_payload' } });
  });

  it('says what it got', () => {
    const result = normalise({ ...base, group_id: 'abc' });
    expect(result).toEqual({
      reject: {
        field: 'group_id',
        message: 'must be a non-negative integer or a string of digits (got "abc")',
        reason: 'invalid_payload',
      },
    });
  });

  it('names an API request for what it is', () => {
    const result = normalise(fixture('api-request/send-private-msg-array-napcat.json'));
    expect('reject' in result && result.reject.message).toContain('send_private_msg');
  });
});

describe('message envelope', () => {
  it('direct messages get the direct priority, the sender as actor and the given time', () => {
    const now = new Date('2026-01-02T03:04:05.000Z');
    const direct = eventFor(accepted(fixture('message-group/at-only-with-group-name-napcat.json')), now);
    expect(direct).toMatchObject({
      kind: 'message.direct',
      groupId: '30012',
      source: 'ingress',
      actorIds: ['20017'],
      priority: PRIORITY.direct,
      createdAt: '2026-01-02T03:04:05.000Z',
      causationId: null,
    });
    const observed = eventFor(accepted(fixture('message-group/text-napcat.json')), now);
    expect(observed.priority).toBe(PRIORITY.normal);
    expect(observed.correlationId).toBe(observed.id);
  });
});

describe('postTypeLabel', () => {
  it('keeps the label set bounded', () => {
    expect(postTypeLabel(fixture('meta/heartbeat-napcat.json'))).toBe('meta_event');
    expect(postTypeLabel({ post_type: 'x'.repeat(500) })).toBe('other');
    expect(postTypeLabel('nope')).toBe('other');
  });
});

describe('OneBot event normaliser: the bot’s own, notices, requests (issue 5)', () => {
  it('a poke at the bot becomes a direct message with reason poke (go-cqhttp target, NapCat target 0)', () => {
    const gocq = accepted(fixture('notice/poke-group-gocq.json'));
    expect(gocq).toMatchObject({ kind: EventKind.MessageDirect, groupId: '30005', userId: '20005' });
    expect(gocq.payload).toMatchObject({ directReason: 'poke', text: '[戳一戳]', messageId: 'poke:1672489767:20005' });
    const napcat = accepted(fixture('notice/poke-group-target0-napcat.json'));
    expect(napcat.payload.directReason).toBe('poke');
    expect(napcat.dedupKey).toBe('10004:30003:poke:1733202425:20004');
  });

  it('a poke between two others is a notice, and the bot poking is its own', () => {
    const other = { ...fixture('notice/poke-group-gocq.json'), target_id: 20009 };
    expect(acceptedAny(other)).toMatchObject({
      kind: EventKind.NoticeReceived,
      payload: { noticeType: 'notify', subType: 'poke', targetId: '20009' },
    });
    const own = { ...fixture('notice/poke-group-gocq.json'), user_id: 10005 };
    expect(normalise(own)).toEqual({ ignore: 'self' });
  });

  it('a recall becomes message.recalled, keyed to the withdrawn message', () => {
    const recall = acceptedAny(fixture('notice/group-recall-napcat.json'));
    expect(recall).toMatchObject({
      kind: EventKind.MessageRecalled,
      groupId: '30015',
      originalDedupKey: '10013:30015:40001',
      payload: {
        messageType: 'group',
        messageId: '40001',
        userId: '20022',
        operatorId: '20022',
        recalledAt: 1734504323,
      },
    });
    const friend = {
      time: 1,
      self_id: 10001,
      post_type: 'notice',
      notice_type: 'friend_recall',
      user_id: 20001,
      message_id: -7,
    };
    expect(acceptedAny(friend)).toMatchObject({
      kind: EventKind.MessageRecalled,
      groupId: 'private:20001',
      payload: { messageId: '-7' },
    });
  });

  it('other notices keep their facts; zeros are nobody; nested files are flattened', () => {
    expect(acceptedAny(fixture('notice/group-decrease-kick-operator0-napcat.json')).payload).not.toHaveProperty(
      'operatorId',
    );
    const upload = acceptedAny(fixture('notice/group-upload-napcat.json'));
    expect(upload.payload).toMatchObject({
      noticeType: 'group_upload',
      details: { 'file.name': '1b86bbc2046898063501ba1fc9738921.mp4', 'file.size': '3685706' },
    });
    const ban = acceptedAny(fixture('notice/group-ban-gocq.json'));
    expect(ban.payload).toHaveProperty('durationSeconds');
  });

  it('the same notice twice gets the same dedup key (HTTP and WS), a different one another', () => {
    const a = acceptedAny(fixture('notice/group-card-napcat.json'));
    const b = acceptedAny(JSON.parse(JSON.stringify(fixture('notice/group-card-napcat.json'))));
    expect(a.dedupKey).toBe(b.dedupKey);
    const c = acceptedAny({ ...fixture('notice/group-card-napcat.json'), card_new: 'x' });
    expect(c.dedupKey).not.toBe(a.dedupKey);
  });

  it('requests are recorded with their flag (user_id 0 kept)', () => {
    expect(acceptedAny(fixture('request/group-add-user0-napcat.json'))).toMatchObject({
      kind: EventKind.RequestReceived,
      dedupKey: '10003:30002|1718037977030305'.replace('10003:', 'request:10003:'),
      payload: { requestType: 'group', subType: 'add', userId: '0', comment: 'enmom' },
    });
  });
});

describe('OneBot event normaliser: direct detection and hard rules (issue 5)', () => {
  const base = fixture('message-group/text-napcat.json');

  it('the persona’s name called anywhere in the text is direct (name)', () => {
    const message = accepted({ ...base, message: '小满你在吗' }, { nicknames: ['林小满', '小满', '满满'] });
    expect(message.payload.directReason).toBe('name');
  });

  it('a quote’s automatic @ of the bot is not a fresh mention: the quote makes it direct as reply', () => {
    const quote = {
      ...base,
      message: [
        { type: 'reply', data: { id: '555' } },
        { type: 'at', data: { qq: '10001' } },
        { type: 'text', data: { text: ' 好的' } },
      ],
    };
    const message = accepted(quote);
    expect(message.payload.mentionsSelf).toBe(false);
    expect(message.payload.directReason).toBe('reply');
  });

  it('a quote of someone else with the automatic @ of them is not direct; a second @ of the bot is', () => {
    const other = {
      ...base,
      message: [
        { type: 'reply', data: { id: '555' } },
        { type: 'at', data: { qq: '20002' } },
        { type: 'text', data: { text: ' 同意' } },
      ],
    };
    expect(accepted(other).kind).toBe(EventKind.MessageObserved);
    const both = { ...other, message: [...(other.message as object[]), { type: 'at', data: { qq: '10001' } }] };
    expect(accepted(both).payload).toMatchObject({ directReason: 'at', mentionsSelf: true });
  });

  it('a quote without the automatic @ is direct once the store says the quoted message is the bot’s', () => {
    const quote = accepted({
      ...base,
      message: [
        { type: 'reply', data: { id: '777' } },
        { type: 'text', data: { text: '真的吗' } },
      ],
    });
    expect(quote.kind).toBe(EventKind.MessageObserved);
    const settled = withDirectness(quote, true);
    expect(settled).toMatchObject({
      kind: EventKind.MessageDirect,
      payload: { directReason: 'reply', replyToMessageId: '777' },
    });
  });

  it('hard rules: other bots, non-listed groups and command prefixes are ignored under the rule’s name', () => {
    expect(normalise(base, { otherBots: new Set(['20001']) })).toEqual({ ignore: 'other_bot' });
    expect(normalise(base, { groups: new Set(['1']) })).toEqual({ ignore: 'group_not_listed' });
    expect(normalise({ ...base, message: '  /help' }, { commandPrefixes: ['/'] })).toEqual({
      ignore: 'command_prefix',
    });
    expect('accept' in normalise({ ...base, message: 'a /b' }, { commandPrefixes: ['/'] })).toBe(true);
  });

  it('limits: too many segments and too much text are rejected with their reason', () => {
    const many = { ...base, message: Array.from({ length: 5 }, () => ({ type: 'text', data: { text: 'a' } })) };
    expect(normalise(many, { maxSegments: 4 })).toEqual({
      reject: { field: 'message', message: expect.any(String), reason: 'too_many_segments' },
    });
    expect(normalise({ ...base, message: 'x'.repeat(101) }, { maxTypedChars: 100 })).toEqual({
      reject: { field: 'message', message: expect.any(String), reason: 'text_too_long' },
    });
  });

  it('unknown segment types survive verbatim; dice and rps and market faces render', () => {
    const event = {
      ...base,
      message: [
        { type: 'dice', data: { result: 3 } },
        { type: 'rps', data: { result: 1 } },
        { type: 'marketface', data: { summary: '[好耶]' } },
        { type: 'newthing', data: { x: { y: 1 } } },
      ],
    };
    const message = accepted(event);
    expect(message.payload.text).toBe('[骰子:3][猜拳][好耶]');
    expect(message.unknownSegmentTypes).toEqual(['newthing']);
    expect(message.payload.segments[3]).toEqual({ type: 'newthing', data: { x: '{"y":1}' } });
  });
});

describe('text with a lone surrogate', () => {
  it('is accepted with U+FFFD in its place, counted, and serialises to JSON that Redis and Postgres take', () => {
    const input = fixture('message-group/at-only-with-group-name-napcat.json');
    const segments = [...(input.message as unknown[]), { type: 'text', data: { text: ' 半个表情\ud83d' } }];
    const result = normalise({
      ...input,
      message: segments,
      raw_message: `${String(input.raw_message)} 半个表情\ud83d`,
    });
    if (!('accept' in result)) throw new Error(`expected accept, got ${JSON.stringify(result)}`);
    const payload = result.accept.payload as MessagePayload;
    expect(result.repairedStrings).toBeGreaterThanOrEqual(2);
    expect(payload.text).toContain('半个表情\ufffd');
    expect(JSON.stringify(eventFor(result.accept, new Date(0))).isWellFormed()).toBe(true);
    expect(JSON.stringify(payload)).not.toMatch(/\\ud[89ab]/i);
  });
});
