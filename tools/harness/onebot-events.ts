/**
 * OneBot v11 events shaped exactly as NapCat posts them (array format; see test/fixtures/onebot/), built by the
 * harnesses' traffic and transcripts. Kept here rather than imported from the test doubles so the harnesses do
 * not depend on where those live.
 */

export interface Segment {
  type: string;
  data: Record<string, unknown>;
}

export const seg = {
  text: (text: string): Segment => ({ type: 'text', data: { text } }),
  at: (qq: string): Segment => ({ type: 'at', data: { qq } }),
  reply: (id: number | string): Segment => ({ type: 'reply', data: { id: String(id) } }),
  face: (id: number): Segment => ({ type: 'face', data: { id: String(id), raw: { faceIndex: id }, resultId: null } }),
  image: (file: string, summary = ''): Segment => ({
    type: 'image',
    data: {
      summary,
      file,
      sub_type: summary ? 1 : 0,
      url: `https://multimedia.nt.qq.com.cn/download?appid=1407&fileid=${file}`,
      file_size: '48213',
    },
  }),
  forward: (id: string): Segment => ({ type: 'forward', data: { id } }),
};

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/\[/g, '&#91;').replace(/]/g, '&#93;');
}

function escapeParam(value: string): string {
  return escapeText(value).replace(/,/g, '&#44;');
}

/** `raw_message`: the CQ string of the segments. */
export function cqString(segments: Segment[]): string {
  return segments
    .map((s) =>
      s.type === 'text'
        ? escapeText(String(s.data.text))
        : `[CQ:${s.type}${Object.entries(s.data)
            .filter(([, v]) => typeof v === 'string' || typeof v === 'number')
            .map(([k, v]) => `,${k}=${escapeParam(String(v))}`)
            .join('')}]`,
    )
    .join('');
}

export interface Sender {
  userId: string;
  nickname: string;
  card?: string;
  role?: 'owner' | 'admin' | 'member';
}

export interface MessageSpec {
  selfId: string;
  messageId: number;
  /** Epoch seconds. */
  time: number;
  sender: Sender;
  segments: Segment[];
}

export function groupMessage(spec: MessageSpec & { groupId: string }): Record<string, unknown> {
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.sender.userId),
    time: spec.time,
    message_id: spec.messageId,
    message_seq: spec.messageId,
    real_id: spec.messageId,
    real_seq: String(spec.messageId % 100_000),
    message_type: 'group',
    sender: {
      user_id: Number(spec.sender.userId),
      nickname: spec.sender.nickname,
      card: spec.sender.card ?? '',
      role: spec.sender.role ?? 'member',
    },
    raw_message: cqString(spec.segments),
    font: 14,
    sub_type: 'normal',
    message: spec.segments,
    message_format: 'array',
    post_type: 'message',
    group_id: Number(spec.groupId),
  };
}

export function privateMessage(spec: MessageSpec): Record<string, unknown> {
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.sender.userId),
    time: spec.time,
    message_id: spec.messageId,
    message_seq: spec.messageId,
    real_id: spec.messageId,
    real_seq: String(spec.messageId % 100_000),
    message_type: 'private',
    sender: { user_id: Number(spec.sender.userId), nickname: spec.sender.nickname, card: '' },
    raw_message: cqString(spec.segments),
    font: 14,
    sub_type: 'friend',
    message: spec.segments,
    message_format: 'array',
    post_type: 'message',
    target_id: Number(spec.sender.userId),
  };
}

/** The bot's own message as NapCat reports it with `reportSelfMessage` (`post_type: message_sent`). */
export function botMessageSent(spec: {
  selfId: string;
  nickname: string;
  groupId: string;
  messageId: number;
  time: number;
  segments: Segment[];
}): Record<string, unknown> {
  return {
    self_id: Number(spec.selfId),
    user_id: Number(spec.selfId),
    time: spec.time,
    message_id: spec.messageId,
    message_seq: spec.messageId,
    message_type: 'group',
    sender: { user_id: Number(spec.selfId), nickname: spec.nickname, card: '', role: 'member', title: '' },
    raw_message: cqString(spec.segments),
    font: 14,
    sub_type: 'normal',
    message: spec.segments,
    message_format: 'array',
    post_type: 'message_sent',
    group_id: Number(spec.groupId),
    target_id: Number(spec.groupId),
  };
}

export function groupRecall(spec: {
  selfId: string;
  groupId: string;
  userId: string;
  messageId: number;
  time: number;
}): Record<string, unknown> {
  return {
    time: spec.time,
    self_id: Number(spec.selfId),
    post_type: 'notice',
    group_id: Number(spec.groupId),
    user_id: Number(spec.userId),
    notice_type: 'group_recall',
    operator_id: Number(spec.userId),
    message_id: spec.messageId,
  };
}

export function heartbeat(selfId: string, time: number): Record<string, unknown> {
  return {
    time,
    self_id: Number(selfId),
    post_type: 'meta_event',
    meta_event_type: 'heartbeat',
    status: { online: true, good: true },
    interval: 30000,
  };
}
