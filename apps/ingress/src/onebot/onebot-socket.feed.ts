import { Injectable, Logger } from '@nestjs/common';
import type { RawData, WebSocket } from 'ws';
import type { WsActionChannel } from '@app/onebot';
import type { Transport } from './ingress.metrics.js';
import { OneBotConnections } from './onebot-connections.js';
import { errorFrame } from './onebot-http.errors.js';
import { OneBotIntake } from './onebot-intake.service.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './onebot-json.rules.js';

/**
 * Frames of one socket being handled at once. WebSocket frames cannot be retried by the implementation, so they
 * wait (for Redis, when it is slow or down); past this many the socket stops being read (TCP backpressure slows
 * the implementation down) until half of them are done, so memory stays bounded without dropping anything.
 */
export const MAX_FRAMES_IN_FLIGHT = 1000;

function frameText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

export interface FeedOptions {
  /** The bot account the connection says it belongs to (`X-Self-ID`), for connection health. */
  selfId: string;
  /** On a connection that also carries our API calls, their responses go here instead of the intake. */
  channel?: WsActionChannel;
  /** Sees every parsed frame (the forward client's heartbeat watchdog). */
  onFrame?: (frame: unknown) => void;
}

/**
 * Feeds the frames of one OneBot WebSocket (reverse or forward) into the intake. A refused frame is answered with
 * an error frame naming the field (`{"error": {code, reason, field, message}}`), counted and dead-lettered, never
 * fatal; other frames on the socket are not affected.
 */
@Injectable()
export class OneBotSocketFeed {
  private readonly logger = new Logger('OneBotSocketFeed');

  constructor(
    private readonly intake: OneBotIntake,
    private readonly connections: OneBotConnections,
  ) {}

  attach(socket: WebSocket, transport: Transport, peer: string, options: FeedOptions): void {
    let inFlight = 0;
    this.connections.opened(transport, options.selfId);
    this.logger.log(`OneBot ${transport} connection open (${peer})`);
    const answer = (frame: unknown): void => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
    };

    socket.on('message', (data: RawData) => {
      const text = frameText(data);
      if (nestsDeeperThan(Buffer.isBuffer(data) ? data : text, MAX_JSON_DEPTH)) {
        const outcome = this.intake.refuse(
          {
            field: '$',
            message: `nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`,
            reason: 'invalid_payload',
          },
          transport,
          { raw: text, peer },
        );
        if (outcome.status === 'rejected') answer(errorFrame(outcome.problem));
        return;
      }
      let input: unknown;
      try {
        input = JSON.parse(text);
      } catch (error) {
        const outcome = this.intake.refuse(
          { field: '$', message: `frame is not valid JSON: ${(error as Error).message}`, reason: 'bad_json' },
          transport,
          { raw: text, peer },
        );
        if (outcome.status === 'rejected') answer(errorFrame(outcome.problem));
        return;
      }
      options.onFrame?.(input);
      if (options.channel?.offer(input)) return;
      inFlight += 1;
      if (inFlight >= MAX_FRAMES_IN_FLIGHT && !socket.isPaused) {
        this.logger.warn(`${inFlight} frames from ${peer} in flight; reading paused until they are done`);
        socket.pause();
      }
      this.intake
        .ingest(input, transport, { failFast: false, raw: text, peer })
        .then((outcome) => {
          if (outcome.status === 'rejected') answer(errorFrame(outcome.problem));
          if (outcome.status === 'unavailable') socket.close(1011, 'event log unavailable');
        })
        .catch((error: unknown) => {
          this.logger.error(`frame via ${transport} (${peer}) failed: ${(error as Error).stack ?? String(error)}`);
        })
        .finally(() => {
          inFlight -= 1;
          if (socket.isPaused && inFlight <= MAX_FRAMES_IN_FLIGHT / 2) socket.resume();
        });
    });

    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
        this.intake.refuse({ field: '$', message: error.message, reason: 'too_large' }, transport, { peer });
      }
      this.logger.warn(`OneBot ${transport} connection error (${peer}): ${error.message}`);
    });

    socket.on('close', (code: number) => {
      options.channel?.closed(`code ${code}`);
      this.connections.closed(transport, options.selfId);
      this.logger.log(`OneBot ${transport} connection closed (${peer}), code ${code}`);
    });
  }
}
