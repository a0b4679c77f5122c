import type { MessagePayload } from '@app/contracts';

let nextMessageId = 7_000_000;

/** A normalised group text message as ingress produces it; override what a test cares about. */
export function sampleMessage(text: string, overrides: Partial<MessagePayload> = {}): MessagePayload {
  return {
    messageType: 'group',
    selfId: '10001',
    messageId: String(nextMessageId++),
    sender: { userId: '20001', nickname: 'Alice', card: '', displayName: 'Alice', role: 'member' },
    segments: [{ type: 'text', data: { text } }],
    text,
    truncated: false,
    mentionsSelf: false,
    sentAt: Math.floor(Date.now() / 1000),
    ...overrides,
  };
}
