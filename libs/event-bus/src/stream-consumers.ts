import { Injectable } from '@nestjs/common';
import type { CustomTransportStrategy } from '@nestjs/microservices';
import type { BatchHandler, ConsumerOptions } from './consumer-types.js';

/** Handle on a running consumer. */
export interface RunningConsumer {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Factory for the read side.
 * - `server(group)`: a Nest transport strategy; `@EventPattern('message.direct')` handlers in the app's
 *   controllers receive `(event, ctx: StreamContext)`. Connect it in main.ts with `app.connectMicroservice`.
 * - `batch(group, handler)`: a consumer that hands whole batches to one handler (the projector).
 * Both own partitions by lease, re-read their pending entries first, reclaim idle ones, dead-letter entries
 * after `QUNLI_MAX_DELIVERIES` and keep a per-group inbox.
 */
@Injectable()
export class StreamConsumers {
  server(_group: string, _options: ConsumerOptions = {}): CustomTransportStrategy {
    throw new Error('stream server: implementation in progress');
  }

  batch(_group: string, _handler: BatchHandler, _options: ConsumerOptions = {}): RunningConsumer {
    throw new Error('batch consumer: implementation in progress');
  }
}
