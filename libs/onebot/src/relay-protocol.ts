/**
 * The reverse-WebSocket relay between outbound and ingress (docs/adr/0010). An implementation that only offers a
 * reverse WebSocket holds one connection, to ingress; outbound's calls travel through Redis to whichever ingress
 * holds it:
 *
 * 1. outbound checks `relayPresence(selfId)` (no presence → `unreachable`, nothing sent), then RPUSHes a
 *    `RelayRequest` on `relayRequests(selfId)`;
 * 2. the ingress holding the connection pops it, drops it unsent when its deadline has passed, else writes the
 *    action frame (with our echo) and publishes a `RelayReply` on `Keyspace.relayReplies` when the answer comes, or when the
 *    connection closes first (`lost`);
 * 3. outbound, on no reply in time, removes its request from the list: removed → it was never taken
 *    (`unreachable`); not there → it was taken and its fate is unknown.
 */

export interface RelayRequest {
  echo: string;
  action: string;
  params: Record<string, unknown>;
  /** Wall-clock epoch ms after which ingress must not send it any more. */
  deadline: number;
}

export type RelayReply =
  | { echo: string; outcome: 'response'; frame: unknown }
  /** Taken but never written (deadline passed, connection gone before writing). */
  | { echo: string; outcome: 'not_sent'; reason: string }
  /** Written, and the connection closed (or the answer timed out) before a response came. */
  | { echo: string; outcome: 'lost'; reason: string };

/** `any`: whichever bot account's connection takes it (outbound without `QUNLI_SELF_ID`). */
export const RELAY_ANY_ACCOUNT = 'any';

export function parseRelayRequest(text: string): RelayRequest | undefined {
  try {
    const value = JSON.parse(text) as Partial<RelayRequest>;
    if (
      typeof value.echo === 'string' &&
      typeof value.action === 'string' &&
      typeof value.deadline === 'number' &&
      typeof value.params === 'object' &&
      value.params !== null
    ) {
      return value as RelayRequest;
    }
  } catch {
    // not a request: dropped by the caller
  }
  return undefined;
}

export function parseRelayReply(text: string): RelayReply | undefined {
  try {
    const value = JSON.parse(text) as Partial<RelayReply>;
    if (typeof value.echo === 'string' && ['response', 'not_sent', 'lost'].includes(value.outcome as string)) {
      return value as RelayReply;
    }
  } catch {
    // ignored
  }
  return undefined;
}
