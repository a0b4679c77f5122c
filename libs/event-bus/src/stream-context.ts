import { BaseRpcContext } from '@nestjs/microservices';
import type { EventEnvelope, Keyspace } from '@app/contracts';

/** A Redis command run inside a handler's commit. Every key must carry the partition's hash tag. */
export interface StagedCommand {
  command: string;
  keys: string[];
  args: (string | number)[];
}

/**
 * What a stream handler gets besides the event: where the entry came from, and a way to make effects that commit
 * atomically with the acknowledgement. The commit is one Lua script on the partition's slot that, unless the
 * event id is already in the consumer group's inbox, appends the published events, runs the staged commands,
 * records the id in the inbox and XACKs the entry. A handler that throws commits nothing: the entry stays
 * pending and is retried, then dead-lettered after `QUNLI_MAX_DELIVERIES`.
 */
export class StreamContext extends BaseRpcContext<[string, number, string]> {
  readonly published: EventEnvelope[] = [];
  readonly staged: StagedCommand[] = [];

  constructor(
    readonly group: string,
    readonly partition: number,
    readonly entryId: string,
    /** 1 on first delivery. */
    readonly deliveries: number,
    readonly keys: Keyspace,
  ) {
    super([group, partition, entryId]);
  }

  /**
   * Append this event when the handler succeeds. Events of the same partition commit atomically with the ack;
   * an event of another partition is appended just before the commit (at least once).
   */
  publish(event: EventEnvelope): void {
    this.published.push(event);
  }

  /** Run `command keys… args…` in the commit, e.g. `stage('LPUSH', [keys.groupRecent(p, g)], json)`. */
  stage(command: string, keys: string[], ...args: (string | number)[]): void {
    this.staged.push({ command, keys, args });
  }
}
