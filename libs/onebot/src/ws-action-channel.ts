import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import { classifyEnvelope, type ApiOutcome } from './api-outcome.rules.js';
import type { OneBotApiResponse } from './onebot-types.js';

/** Our echoes carry this prefix, so a response to someone else's request on a shared socket is never taken. */
export const ECHO_PREFIX = 'qunli:';

/** What became of one action frame. */
export type WsExchange =
  | { kind: 'response'; frame: OneBotApiResponse }
  /** Nothing was written: the socket was not open. */
  | { kind: 'not_sent'; reason: string }
  /** Written (or possibly written) and no answer came: closed, timed out, write error. */
  | { kind: 'lost'; reason: string; timedOut: boolean };

interface PendingCall {
  resolve(exchange: WsExchange): void;
  timer: NodeJS.Timeout;
}

function isResponse(frame: unknown): frame is OneBotApiResponse & { echo: string } {
  return (
    typeof frame === 'object' &&
    frame !== null &&
    !Array.isArray(frame) &&
    typeof (frame as { echo?: unknown }).echo === 'string' &&
    typeof (frame as { retcode?: unknown }).retcode === 'number' &&
    !('post_type' in frame)
  );
}

/** The classified outcome of an exchange. */
export function outcomeOf<T>(exchange: WsExchange): ApiOutcome<T> {
  switch (exchange.kind) {
    case 'response':
      return classifyEnvelope(exchange.frame as OneBotApiResponse<T>);
    case 'not_sent':
      return { kind: 'unreachable', code: 'ONEBOT.NOT_CONNECTED', message: exchange.reason };
    case 'lost':
      return {
        kind: 'unknown',
        code: exchange.timedOut ? 'ONEBOT.TIMEOUT' : 'ONEBOT.CONNECTION_LOST',
        message: exchange.reason,
      };
  }
}

/**
 * OneBot actions over one open WebSocket (a forward connection we opened, or a reverse one the implementation
 * opened to ingress): action frames `{action, params, echo}`, responses matched by `echo`. The owner of the
 * socket feeds every parsed frame to `offer()` and calls `closed()` when the socket goes away.
 *
 * Outcomes: not open → nothing was written (`unreachable`); no answer within the timeout → `unknown`
 * (ONEBOT.TIMEOUT); the socket closed while waiting → `unknown` (ONEBOT.CONNECTION_LOST).
 */
export class WsActionChannel {
  private readonly pending = new Map<string, PendingCall>();

  constructor(
    private readonly socket: WebSocket,
    private readonly timeoutMs: number,
  ) {}

  get open(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  get inFlight(): number {
    return this.pending.size;
  }

  async call<T>(action: string, params: Record<string, unknown>): Promise<ApiOutcome<T>> {
    return outcomeOf<T>(await this.request(action, params));
  }

  request(
    action: string,
    params: Record<string, unknown>,
    echo = `${ECHO_PREFIX}${randomUUID()}`,
  ): Promise<WsExchange> {
    if (!this.open) return Promise.resolve({ kind: 'not_sent', reason: 'the WebSocket is not open' });
    return new Promise<WsExchange>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(echo);
        resolve({ kind: 'lost', reason: `no response to ${action} within ${this.timeoutMs} ms`, timedOut: true });
      }, this.timeoutMs);
      this.pending.set(echo, { resolve, timer });
      this.socket.send(JSON.stringify({ action, params, echo }), (error) => {
        if (!error) return;
        const call = this.pending.get(echo);
        if (!call) return;
        clearTimeout(call.timer);
        this.pending.delete(echo);
        // ws reports a write that failed on a socket that was closing; the frame may have been partly written.
        resolve({ kind: 'lost', reason: `writing ${action}: ${error.message}`, timedOut: false });
      });
    });
  }

  /** Take a frame if it answers one of our calls (or carries our echo after its call gave up). */
  offer(frame: unknown): boolean {
    if (!isResponse(frame)) return false;
    const call = this.pending.get(frame.echo);
    if (!call) return frame.echo.startsWith(ECHO_PREFIX);
    clearTimeout(call.timer);
    this.pending.delete(frame.echo);
    call.resolve({ kind: 'response', frame });
    return true;
  }

  /** The socket is gone: every call still waiting has an unknown outcome. */
  closed(reason: string): void {
    for (const [echo, call] of this.pending) {
      clearTimeout(call.timer);
      call.resolve({ kind: 'lost', reason: `connection closed (${reason})`, timedOut: false });
      this.pending.delete(echo);
    }
  }
}
