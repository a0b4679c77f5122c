import { Injectable, Logger } from '@nestjs/common';
import type { RawData, WebSocket } from 'ws';
import { IngressMetrics, type Transport } from './ingress.metrics.js';
import { OneBotIntake } from './onebot-intake.service.js';

/** Largest frame (and HTTP body) ingress reads: 1 MiB. */
export const MAX_INPUT_BYTES = 1024 * 1024;
/**
 * Frames of one socket waiting for Redis. WebSocket frames cannot be retried by the implementation, so they wait
 * for Redis to come back; past this many the socket is closed ("try again later") rather than hold memory without
 * bound, and the implementation reconnects.
 */
export const MAX_FRAMES_IN_FLIGHT = 1000;

function frameText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/**
 * Feeds the frames of one OneBot WebSocket (reverse or forward) into the intake. Frames are events; API responses
 * on a shared connection are ignored by the normaliser. A bad frame is counted and skipped, never fatal.
 */
@Injectable()
export class OneBotSocketFeed {
  private readonly logger = new Logger('OneBotSocketFeed');

  constructor(
    private readonly intake: OneBotIntake,
    private readonly metrics: IngressMetrics,
  ) {}

  attach(socket: WebSocket, transport: Transport, peer: string): void {
    let inFlight = 0;
    this.metrics.connectionOpened(transport);
    this.logger.log(`OneBot ${transport} connection open (${peer})`);

    socket.on('message', (data: RawData) => {
      const text = frameText(data);
      let input: unknown;
      try {
        input = JSON.parse(text);
      } catch (error) {
        this.metrics.countRejected('bad_json');
        this.logger.warn(`bad JSON frame via ${transport} (${peer}): ${(error as Error).message}`);
        return;
      }
      if (inFlight >= MAX_FRAMES_IN_FLIGHT) {
        this.logger.error(`${inFlight} frames from ${peer} wait for the event log; closing so the peer backs off`);
        socket.close(1013, 'event log unavailable');
        return;
      }
      inFlight += 1;
      this.intake
        .ingest(input, transport, { failFast: false })
        .then((outcome) => {
          if (outcome.status === 'unavailable') socket.close(1011, 'event log unavailable');
        })
        .catch((error: unknown) => {
          this.logger.error(`frame via ${transport} (${peer}) failed: ${(error as Error).stack ?? String(error)}`);
        })
        .finally(() => {
          inFlight -= 1;
        });
    });

    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.metrics.countRejected('too_large');
      this.logger.warn(`OneBot ${transport} connection error (${peer}): ${error.message}`);
    });

    socket.on('close', (code: number) => {
      this.metrics.connectionClosed(transport);
      this.logger.log(`OneBot ${transport} connection closed (${peer}), code ${code}`);
    });
  }
}
