import type { EventKind, PayloadOf } from '@app/contracts';
import type { DirectnessClues } from './direct.rules.js';
import type { HardRuleSettings } from './hard.rules.js';
import type { PayloadProblem } from './onebot-fields.rules.js';

/** What the OneBot normalisers decide about one input (types only, shared by the normalisers and the intake). */

export interface NormaliserSettings extends HardRuleSettings {
  /** `QUNLI_SELF_ID`: when set, events of any other bot account are ignored and @ detection uses it. */
  selfId?: string;
  /** Names that make a group message direct when its text contains one (`QUNLI_NICKNAMES`, else the persona's). */
  nicknames: readonly string[];
  /** `QUNLI_MAX_TEXT_CHARS`: the plain rendering is cut (and marked truncated) beyond this. */
  maxTextChars: number;
  /** `QUNLI_INGRESS_MAX_SEGMENTS`: more segments than this → rejected (`too_many_segments`). */
  maxSegments: number;
  /** `QUNLI_INGRESS_MAX_TEXT_CHARS`: more typed characters than this → rejected (`text_too_long`). */
  maxTypedChars: number;
}

export type MessageKind = typeof EventKind.MessageDirect | typeof EventKind.MessageObserved;

interface AcceptedBase<K extends keyof AcceptedKinds> {
  kind: K;
  /** The group id, or `private:<userId>` for a private chat. */
  groupId: string;
  /** Who did it (sender, poker, operator). */
  actorId: string;
  /** The same upstream input always maps to the same key, whatever transport it came over. */
  dedupKey: string;
  payload: PayloadOf<K>;
}

interface AcceptedKinds {
  'message.observed': true;
  'message.direct': true;
  'message.echoed': true;
  'message.recalled': true;
  'notice.received': true;
  'request.received': true;
}

export interface AcceptedMessage extends AcceptedBase<MessageKind> {
  userId: string;
  /** What decides whether it is addressed to the bot (settled by the intake once it knows whom a quote quotes). */
  clues: DirectnessClues;
  /** Segment types this normaliser has no rendering for (kept as-is in the payload). */
  unknownSegmentTypes: string[];
}

export type AcceptedEcho = AcceptedBase<'message.echoed'>;

export interface AcceptedRecall extends AcceptedBase<'message.recalled'> {
  /** The dedup key of the withdrawn message, which holds the id of the event that carried it. */
  originalDedupKey: string;
}

export type AcceptedNotice = AcceptedBase<'notice.received'>;
export type AcceptedRequest = AcceptedBase<'request.received'>;

export type Accepted = AcceptedMessage | AcceptedEcho | AcceptedRecall | AcceptedNotice | AcceptedRequest;

export const IGNORE_REASONS = [
  'self',
  'other_account',
  'other_bot',
  'group_not_listed',
  'command_prefix',
  'meta_event',
  'api_response',
  'unsupported_message_type',
] as const;
export type IgnoreReason = (typeof IGNORE_REASONS)[number];

/** What a meta event says about the connection to the implementation. */
export interface ConnectionSignal {
  type: 'heartbeat' | 'lifecycle';
  selfId: string;
  /** Epoch seconds reported by the implementation. */
  time: number;
  /** Heartbeat `status.online`; lifecycle `enable`/`connect` → true, `disable` → false. */
  online?: boolean;
  good?: boolean;
  /** Heartbeat `interval` (ms): the next heartbeat is due within it. */
  intervalMs?: number;
}

export type Normalised =
  /** `repairedStrings`: strings whose lone surrogates were replaced (well-formed.rules.ts). */
  | { accept: Accepted; repairedStrings?: number }
  | { ignore: IgnoreReason; signal?: ConnectionSignal }
  | { reject: PayloadProblem };
