import { findDelivered } from './verification.rules.js';

const SELF = '10001';
const calledAt = Date.parse('2026-03-01T10:00:00Z');
const t = (offset: number) => Math.floor(calledAt / 1000) + offset;
const message = (id: number, user: string, text: string, time: number, quote?: string) => ({
  message_id: id,
  user_id: Number(user),
  time,
  message: [
    ...(quote
      ? [
          { type: 'reply', data: { id: quote } },
          { type: 'at', data: { qq: '20001' } },
        ]
      : []),
    { type: 'text', data: { text } },
  ],
});

describe('finding a part in the recent history', () => {
  const part = { selfId: SELF, text: '好的', form: 'text' as const, calledAt, claimed: new Set<string>() };

  it('finds the bot’s message with the same text written after the call (quote and auto @ aside)', () => {
    const history = [
      message(1, '20001', '好的', t(1)),
      message(2, SELF, '好的', t(2), '99'),
      message(3, SELF, '好的', t(3)),
    ];
    expect(findDelivered(history, part)).toBe('2');
  });

  it('ignores older messages, other texts, other authors and ids already accounted for', () => {
    const history = [
      message(1, SELF, '好的', t(-60)),
      message(2, SELF, '好滴', t(1)),
      message(3, '20001', '好的', t(1)),
      message(4, SELF, '好的', t(2)),
    ];
    expect(findDelivered(history, { ...part, claimed: new Set(['4']) })).toBeUndefined();
    expect(findDelivered(history, part)).toBe('4');
  });

  it('a forward message is found by its forward segment', () => {
    const history = [
      { message_id: 7, user_id: Number(SELF), time: t(1), message: [{ type: 'forward', data: { id: 'r' } }] },
    ];
    expect(findDelivered(history, { ...part, form: 'forward', text: '' })).toBe('7');
  });
});
