import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import type { EventEnvelope } from '@app/contracts';
import type { EventLog } from './event-log.js';

/**
 * The Nest client side of the event log: `client.emit(kind, event)` appends a validated event. Request-response
 * (`send`) has no meaning on a log of facts and answers with an error.
 */
export class EventLogClient extends ClientProxy {
  constructor(private readonly log: EventLog) {
    super();
  }

  async connect(): Promise<void> {}

  close(): void {}

  unwrap<T>(): T {
    return this.log as T;
  }

  protected publish(_packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    callback({ err: new Error('the event log carries facts, not requests: use emit()'), isDisposed: true });
    return () => undefined;
  }

  protected async dispatchEvent<T = string>(packet: ReadPacket<EventEnvelope>): Promise<T> {
    if (packet.pattern !== packet.data.kind) {
      throw new Error(`emit pattern ${String(packet.pattern)} does not match event kind ${packet.data.kind}`);
    }
    return (await this.log.append(packet.data)) as T;
  }
}
