import { Server, type CustomTransportStrategy } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { HANDLED_KINDS, type ConsumerGroup, type EventEnvelope } from '@app/contracts';
import type { PartitionedConsumer } from './partitioned-consumer.js';
import type { StreamContext } from './stream-context.js';

/**
 * A Nest microservice transport over Redis Streams. Nest's own Redis transporter is fire-and-forget pub/sub; this
 * one is a consumer group with leases, pending re-reads, a janitor, dead-letters and an inbox (see
 * `PartitionReader`). Controllers subscribe with `@EventPattern(kind)` and receive `(event, ctx: StreamContext)`.
 */
export class RedisStreamsServer extends Server implements CustomTransportStrategy {
  private consumer: PartitionedConsumer | undefined;

  constructor(
    readonly group: string,
    private readonly createConsumer: (server: RedisStreamsServer) => PartitionedConsumer,
  ) {
    super();
  }

  handles(kind: string): boolean {
    return this.messageHandlers.has(kind);
  }

  /** Run the controller method for this event; a thrown error or errored observable rejects. */
  async dispatch(event: EventEnvelope, ctx: StreamContext): Promise<void> {
    // Kinds are plain strings, so the route is the kind itself: Nest's getHandlerByPattern would first try
    // JSON.parse on it and throw a SyntaxError per event (≈ 1.5% of the scheduler's CPU under load).
    const handler = this.messageHandlers.get(event.kind);
    if (!handler) return;
    const result: unknown = await handler(event, ctx);
    if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
  }

  /**
   * Kinds this group's handlers take that `HANDLED_KINDS` does not list for it. Writers pass a listed group over
   * entries of kinds not listed (ADR 0044), so such a handler would miss events: the server refuses to start with
   * it. A group `HANDLED_KINDS` does not name is never passed over.
   */
  unlisted(): string[] {
    const listed: readonly string[] | undefined = HANDLED_KINDS[this.group as ConsumerGroup];
    return listed ? [...this.messageHandlers.keys()].filter((kind) => !listed.includes(kind)) : [];
  }

  listen(callback: (error?: unknown) => void): void {
    const unlisted = this.unlisted();
    if (unlisted.length > 0) {
      callback(
        new Error(
          `consumer group ${this.group} handles ${unlisted.join(', ')}, which HANDLED_KINDS does not list for it: ` +
            'writers would pass the group over those events (libs/contracts/src/streams.ts)',
        ),
      );
      return;
    }
    this.consumer = this.createConsumer(this);
    this.consumer.start().then(
      () => callback(),
      (error: unknown) => callback(error),
    );
  }

  async close(): Promise<void> {
    await this.consumer?.stop();
  }

  on(): never {
    throw new Error('RedisStreamsServer has no event listeners; watch /metrics and /health instead');
  }

  unwrap<T>(): T {
    return this.consumer as T;
  }
}
