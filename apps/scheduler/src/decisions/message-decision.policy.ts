import type { DecisionOutcome, MessagePayload, StateTransition } from '@app/contracts';
import { EventRecord } from '../events/event-state.machine.js';

export interface MessageDecision {
  outcome: DecisionOutcome;
  reason: string;
  features: Record<string, number>;
  transitions: StateTransition[];
}

const DIRECT_REASON_TEXT = {
  at: '@了机器人',
  reply: '引用了机器人的消息',
  name: '叫了机器人的名字',
  private: '私聊',
  poke: '戳了戳机器人',
} as const;

/**
 * What to do about one message. Messages addressed to the bot (@, quote, name, private) are forced into an
 * episode; everything else is recorded and skipped with its reason until attention scoring decides ambient
 * participation. The reason is one line a person can read in the panel.
 */
export function decideOnMessage(eventId: string, message: MessagePayload): MessageDecision {
  const direct = message.directReason;
  const features: Record<string, number> = {
    directness: direct ? 1 : 0,
    at: direct === 'at' ? 1 : 0,
    reply: direct === 'reply' ? 1 : 0,
    name: direct === 'name' ? 1 : 0,
    private: direct === 'private' ? 1 : 0,
    textLength: message.text.length,
  };
  const record = new EventRecord(eventId).through(['classified', 'linked'], direct ? `direct: ${direct}` : 'ambient');
  if (direct) {
    const reason = `deliberate: ${DIRECT_REASON_TEXT[direct]} (forced)`;
    record.through(['scheduled', 'eligible', 'deliberating'], reason);
    return { outcome: 'deliberate', reason, features, transitions: record.trail };
  }
  const reason = 'skipped: not addressed to the bot; ambient attention is not enabled';
  record.transition('skipped', reason);
  return { outcome: 'skip', reason, features, transitions: record.trail };
}
