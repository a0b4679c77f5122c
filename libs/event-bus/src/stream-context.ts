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
  private readonly afterCommitTasks: (() => Promise<void> | void)[] = [];
  /**
   * Set by the reader once the commit ran: `true` when it applied the published events and staged commands,
   * `false` when the event id was already in the inbox (a duplicate: nothing of this handler's was written).
   */
  applied?: boolean;
  /** What the consumer's `prefetch` started reading for this entry (see `ConsumerOptions.prefetch`). */
  prefetched?: unknown;

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

  /**
   * Run `task` once the commit succeeded (wake a dispatcher, notify a peer). It must be safe to skip: a crash right
   * after the commit never runs it, so whatever it does must also happen some other way (a poll, a sweep).
   * A failing task is logged; it never makes the entry be handled again.
   */
  afterCommit(task: () => Promise<void> | void): void {
    this.afterCommitTasks.push(task);
  }

  /** Called by the reader after the commit. */
  async runAfterCommit(onError: (error: unknown) => void): Promise<void> {
    for (const task of this.afterCommitTasks.splice(0)) {
      try {
        await task();
      } catch (error) {
        onError(error);
      }
    }
  }
}
